"""Recipe files (YAML) shipped with curate. Empty until the recipe issue lands."""

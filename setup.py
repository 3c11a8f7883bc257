"""Finds curate's packages: every package under each of the repo folders that install inside the one
`curate` namespace (so installing adds no generic top-level names such as `models`), and a new
subpackage (curate.modalities.pdf, ...) is never left out of a wheel. The rest is pyproject.toml."""

from setuptools import find_packages, setup

# installed package -> repo folder
FOLDERS = {"curate": "curate", "curate.modalities": "modalities", "curate.models": "models",
           "curate.recipes": "recipes"}


def packages() -> list[str]:
    """Every installed package name, each folder's own and its subpackages (found by __init__.py)."""
    found = []
    for name, folder in FOLDERS.items():
        found += [name, *(f"{name}.{sub}" for sub in find_packages(folder))]
    return found


setup(packages=packages(), package_dir=FOLDERS)

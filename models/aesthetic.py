"""Aesthetic score of an image embedding: the LAION aesthetic predictor's head, from a local directory.

The LAION "improved aesthetic predictor" (christophschuhmann/improved-aesthetic-predictor,
`sac+logos+ava1-l14-linearMSE.pth`) is a small MLP over the L2-normalised CLIP ViT-L/14 image
embedding: Linear 768->1024, Dropout, 1024->128, Dropout, 128->64, Dropout, 64->16, 16->1, no
activations, trained to predict the mean human rating (1-10). `head(input_dim)` builds that
shape as the same `torch.nn.Sequential` (the Dropouts at indices 1, 3, 5), so the published
state_dict loads as it is; for an embedder of another width the first layer takes that width.

A head directory holds `aesthetic.json` (`{"input_dim": 768, "weights": "<file>",
"embedding_model": "clip-vit-large-patch14"}`: the embedder it was trained on, for the reader)
and the weights file it names: a state_dict as `.pth` (torch.save; read with weights_only) or
`.safetensors`. `AestheticModel(model=DIR).score(vectors)` gives per vector its score, or an
ItemFailure when its length is not the head's `input_dim` (a head of another embedder).
`curate.models.tiny_embedders.build_tiny_aesthetic` writes a random one for tests.
"""

from __future__ import annotations

import json
from pathlib import Path

import curate as cu
from curate.deps import require
from curate.errors import CurateError

CONFIG = "aesthetic.json"
LAION_DIM = 768  # CLIP ViT-L/14's embedding: the published head's input
HIDDEN = (1024, 128, 64, 16)  # the LAION head's layer widths after the input
DROPOUT = (0.2, 0.2, 0.1)  # after its first three layers (inactive in eval; kept for the state_dict's indices)
HOWTO = ("download the LAION head (christophschuhmann/improved-aesthetic-predictor, "
         "sac+logos+ava1-l14-linearMSE.pth) into a directory with an aesthetic.json of "
         '{"input_dim": 768, "weights": "sac+logos+ava1-l14-linearMSE.pth"}, and embed with CLIP ViT-L/14 '
         "(for a test, a tiny random head: python -m curate.models.tiny_embedders --aesthetic /tmp/tiny-aesthetic)")


def head(input_dim: int = LAION_DIM):
    """The LAION aesthetic head's shape as a torch.nn.Sequential, on an input of `input_dim`."""
    nn = require("torch", "the aesthetic score").nn
    widths = (input_dim, *HIDDEN)
    layers = []
    for n, (a, b) in enumerate(zip(widths, widths[1:])):
        layers.append(nn.Linear(a, b))
        if n < len(DROPOUT):
            layers.append(nn.Dropout(DROPOUT[n]))
    layers.append(nn.Linear(HIDDEN[-1], 1))
    return nn.Sequential(*layers)


def save_head(module, path: str | Path, embedding_model: str = "") -> Path:
    """Write a head (`head(...)`'s shape) to directory `path` as aesthetic.json and head.safetensors."""
    from safetensors.torch import save_file

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in module.state_dict().items()}, str(path / "head.safetensors"))
    config = {"input_dim": int(module[0].in_features), "weights": "head.safetensors",
              "embedding_model": embedding_model}
    (path / CONFIG).write_text(json.dumps(config, indent=2))
    return path


class AestheticModel:
    """The LAION-shaped aesthetic head over embeddings, one per worker (`score`)."""

    requires = ("torch",)
    default_resources: dict = {}  # a few MFLOPs per vector: a CPU share

    def __init__(self, model: str | None = None, device: str = "cpu"):
        torch = require("torch", "the aesthetic score")
        config, weights = read_config(model)
        self.torch, self.device = torch, device
        self.input_dim = int(config["input_dim"])
        self.embedding_model = str(config.get("embedding_model") or "")
        self.module = head(self.input_dim)
        try:
            self.module.load_state_dict(load_weights(weights, torch))
        except (RuntimeError, KeyError) as exc:
            raise CurateError(f"aesthetic head {model}: {weights.name} is not a head of input_dim "
                              f"{self.input_dim} in the LAION shape ({exc}); {HOWTO}") from None
        self.module = self.module.to(device).eval()

    def score(self, vectors: list) -> list:
        """Per embedding (a 1-D float array, L2-normalised as the head was trained on): its score."""
        import numpy as np

        results: list = [None] * len(vectors)
        todo = []
        for i, v in enumerate(vectors):
            v = None if v is None else np.asarray(v, np.float32)
            if v is None or v.ndim != 1 or v.shape[0] != self.input_dim:
                results[i] = cu.ItemFailure(cu.InputError(
                    f"the aesthetic head takes vectors of length {self.input_dim} (its embedder: "
                    f"{self.embedding_model or 'as trained'}); got {None if v is None else v.shape}: embed with the "
                    "model the head was trained on, or give a head of this embedder's width"))
                continue
            todo.append((i, v))
        if todo:
            batch = self.torch.from_numpy(np.stack([v for _, v in todo])).to(self.device)
            with self.torch.inference_mode():
                scores = self.module(batch)[:, 0].float().cpu().numpy()
            for (i, _), s in zip(todo, scores, strict=True):
                results[i] = float(s)
        return results

    __call__ = score


def read_config(model) -> tuple[dict, Path]:
    """The head directory's aesthetic.json and the path of its weights; CurateError with the fix."""
    if not model or not Path(str(model)).is_dir():
        raise CurateError(f"aesthetic head model={model!r}: no such directory (nothing downloads); {HOWTO}")
    path = Path(str(model))
    try:
        config = json.loads((path / CONFIG).read_text(encoding="utf-8"))
        dim, weights = config["input_dim"], path / str(config["weights"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CurateError(f"aesthetic head {path}: no readable {CONFIG} with input_dim and weights ({exc}); "
                          f"{HOWTO}") from None
    if not isinstance(dim, int) or isinstance(dim, bool) or dim < 1 or not weights.is_file():
        raise CurateError(f"aesthetic head {path}: input_dim={dim!r} (a whole number >= 1) and weights {weights.name} "
                          f"(a file in the directory) are needed; {HOWTO}")
    return config, weights


def load_weights(path: Path, torch) -> dict:
    """A head's state_dict from a .safetensors or a torch.save file (read without unpickling
    code), its keys as `head()`'s Sequential names them."""
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        state = load_file(str(path))
    else:
        state = torch.load(str(path), map_location="cpu", weights_only=True)
    # LAION's file is the state_dict of a module holding the Sequential as `layers`
    return {k.removeprefix("layers."): v for k, v in state.items()}

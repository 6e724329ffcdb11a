"""Side-by-side parity of mineclip_jax with the official PyTorch MineCLIP.

Builds the official model (both variants, full size) with seeded random weights, converts its
state dict with `mineclip_jax.load_state_dict`, runs both on the same random video and prompts in
float32 on CPU and prints the max errors of per-frame image features, temporal features, video
embeddings (adapter applied), text embeddings and logits. Also checks that a `.pth` written by
`mineclip_jax.save_torch_checkpoint` loads strictly into the official model.

    pip install "torch>=2.1" x-transformers==0.27.1 einops dm-tree pillow
    git clone https://github.com/MineDojo/MineCLIP /tmp/mineclip_ref   # never vendored here
    python -m experiments.mineclip_parity.parity --reference /tmp/mineclip_ref

The official package `__init__` imports the MineDojo simulator and its tokenizer downloads from
a model hub; neither is needed here: the model modules are imported directly, token ids come
from `mineclip_jax.tokenize` (identical to the official tokenization), and `transformers` /
`kornia` are replaced by inert stand-ins when they are not installed (the code paths that use
them - hub tokenizer, frame resizing - are never taken).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import types
from pathlib import Path

import numpy as np

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402

import mineclip_jax as mcj  # noqa: E402

PROMPTS = [
    "shear a sheep",
    "milk a cow",
    "hunt a cow",
    "combat a spider in the night",
    "find a nether portal",
    "build a stone house with a wooden door, two windows & a chimney!",
]


def import_official(reference: Path):
    """The official `MineCLIP` class from a checkout of MineDojo/MineCLIP at `reference`."""
    try:
        import torch
    except ImportError as e:
        raise SystemExit('parity needs torch: pip install "mineclip-jax[torch]"') from e
    package_dir = reference / "mineclip"
    if not (package_dir / "mineclip" / "mineclip.py").is_file():
        raise SystemExit(
            f"{reference} is not a MineDojo/MineCLIP checkout (no mineclip/mineclip/mineclip.py); "
            "clone https://github.com/MineDojo/MineCLIP and pass its root as --reference"
        )
    try:
        import x_transformers  # noqa: F401
    except ImportError as e:
        raise SystemExit(
            "the official attn aggregator needs pip install x-transformers==0.27.1"
        ) from e
    for name in ("transformers", "kornia"):
        try:
            __import__(name)
        except ImportError:
            stub = types.ModuleType(name)
            stub.AutoTokenizer = stub.AutoModel = None
            sys.modules[name] = stub
    # A bare package object skips mineclip/__init__.py (which imports the MineDojo simulator).
    package = types.ModuleType("mineclip")
    package.__path__ = [str(package_dir)]
    sys.modules["mineclip"] = package
    from mineclip.mineclip.mineclip import MineCLIP

    return torch, MineCLIP


def build_official(torch, MineCLIP, pool: str, seed: int):
    torch.manual_seed(seed)
    model = MineCLIP(
        "vit_base_p16_fz.v2.t2",
        resolution=(160, 256),
        pool_type="attn.d2.nh8.glusw" if pool == "attn" else "avg",
        image_feature_dim=512,
        mlp_adapter_spec="v0-2.t0",
        hidden_dim=512,
    ).eval()
    # The official init leaves biases at 0 and LayerNorms at 1/0; perturb every tensor so the
    # comparison exercises each weight (including LN affine and biases), not just the init.
    generator = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for _name, p in model.named_parameters():  # aliases are yielded once
            noise = torch.randn(p.shape, generator=generator)
            if p.ndim <= 1:
                p.add_(0.05 * noise)
            else:
                p.add_(0.1 * p.std() * noise)
    return model


def dump_keys(model, path: Path):
    lines = [f"{k} {list(v.shape)}" for k, v in model.state_dict().items()]
    path.write_text("\n".join(lines) + "\n")
    print(f"wrote {len(lines)} keys to {path}")


def max_err(a, b) -> tuple[float, float]:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    abs_err = float(np.max(np.abs(a - b)))
    return abs_err, abs_err / float(np.max(np.abs(b)))


def compare(torch, model, pool: str, batch: int, frames: int, seed: int) -> dict[str, tuple]:
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    mc = mcj.load_state_dict(sd)
    assert mc.config.pool == pool, mc.config
    rng = np.random.default_rng(seed)
    video = rng.integers(0, 256, size=(batch, frames, 160, 256, 3), dtype=np.uint8)
    tokens = mcj.tokenize(PROMPTS)
    with torch.no_grad():
        video_t = torch.from_numpy(video).permute(0, 1, 4, 2, 3).contiguous()  # channels first
        ref_frames = model.forward_image_features(video_t)
        ref_pool = model.forward_video_features(ref_frames)
        head = model.reward_head
        r = torch.sigmoid(head.video_residual_weight)
        ref_video = r * ref_pool + (1.0 - r) * head.video_adapter(ref_pool)
        ref_text = model.encode_text(torch.from_numpy(tokens.astype(np.int64)))
        ref_logits, _ = model.forward_reward_head(ref_pool, text_tokens=ref_text)
    ours_frames = mc.encode_frames(video)
    ours_pool = mc.temporal_pool(ours_frames)
    ours_video = mc.encode_video(video)
    ours_text = mc.encode_text(tokens)
    ours_logits = mc.logits(ours_video, ours_text)
    results = {
        "image features": max_err(ours_frames, ref_frames.numpy()),
        "temporal features": max_err(ours_pool, ref_pool.numpy()),
        "video embeddings": max_err(ours_video, ref_video.numpy()),
        "text embeddings": max_err(ours_text, ref_text.numpy()),
        "logits": max_err(ours_logits, ref_logits.numpy()),
    }
    # Our exported .pth must load strictly into the official model and give its outputs.
    with tempfile.TemporaryDirectory() as tmp:
        path = mcj.save_torch_checkpoint(mc, Path(tmp) / f"{pool}.pth")
        fresh = build_official(torch, type(model), pool, seed + 100)
        fresh.load_ckpt(str(path), strict=True)
        with torch.no_grad():
            again = fresh.forward_reward_head(
                fresh.forward_video_features(fresh.forward_image_features(video_t)),
                text_tokens=torch.from_numpy(tokens.astype(np.int64)),
            )[0]
        results["exported .pth logits"] = max_err(again.numpy(), ref_logits.numpy())
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", type=Path, required=True, help="MineDojo/MineCLIP checkout")
    parser.add_argument("--variant", choices=["attn", "avg", "both"], default="both")
    parser.add_argument("--batch", type=int, default=2, help="videos per comparison")
    parser.add_argument("--frames", type=int, default=16, help="frames per video")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    parser.add_argument("--dump-keys", type=Path, help="write the official attn key/shape list")
    parser.add_argument("--abs-tol", type=float, default=1e-4)
    parser.add_argument("--logit-rel-tol", type=float, default=2e-5)
    args = parser.parse_args(argv)

    torch, MineCLIP = import_official(args.reference.expanduser().resolve())
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, jax {jax.__version__} ({jax.default_backend()}), float32")
    ok = True
    for pool in ["attn", "avg"] if args.variant == "both" else [args.variant]:
        model = build_official(torch, MineCLIP, pool, args.seed)
        if args.dump_keys is not None and pool == "attn":
            dump_keys(model, args.dump_keys)
        results = compare(torch, model, pool, args.batch, args.frames, args.seed)
        print(f"\n[{pool}] {args.batch} videos x {args.frames} frames, {len(PROMPTS)} prompts")
        print(f"  {'output':24s} {'max abs err':>12s} {'max abs / max |ref|':>20s}")
        for name, (abs_err, rel_err) in results.items():
            passed = abs_err <= args.abs_tol and (name != "logits" or rel_err <= args.logit_rel_tol)
            ok &= passed
            print(f"  {name:24s} {abs_err:12.3e} {rel_err:20.3e}  {'ok' if passed else 'FAIL'}")
    print("\nPARITY", "PASSED" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Loading and saving MineCLIP weights.

    mc = mcj.load_checkpoint("mini")            # MineCLIP-mini, shipped with the package
    mc = mcj.load_checkpoint("attn.pth")        # released checkpoint (needs torch, once)
    mcj.save_checkpoint(mc, "mineclip_attn")    # native: config.json + params.msgpack
    mcj.save_checkpoint(mc, "small", dtype="int8")  # large tables int8, the rest float16
    mc = mcj.load_checkpoint("mineclip_attn")   # no torch needed from now on

Accepted inputs of `load_checkpoint`:
* a shipped model by name: "mini" (`mineclip_jax/pretrained/mini`, checksums verified);
* the released `attn.pth` / `avg.pth` (a dict whose `state_dict` holds `model.`-prefixed keys);
* a plain PyTorch state dict with the official keys (`torch.save(model.state_dict(), path)`);
* a `.npz` of official-key arrays (e.g. from `export_state_dict`);
* a native checkpoint directory written by `save_checkpoint` (its SHA256SUMS verified when
  present: a damaged copy is refused, naming the file);
* an in-memory mapping of official keys to arrays.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jax
import numpy as np
from flax import serialization

from mineclip_jax.config import MineCLIPConfig
from mineclip_jax.convert import (
    CheckpointMismatchError,
    infer_config,
    openai_clip_to_state_dict,
    params_to_state_dict,
    state_dict_to_params,
)
from mineclip_jax.handle import MineCLIPHandle, init_params, param_shapes

# Native format markers (config.json "format"). /1: every array stored as float32 or float16 (the
# dtype is in the msgpack). /2: as /1, except the arrays listed in config.json "storage"
# ("int8": their tree paths) are stored as {"int8": q, "scale": s}, decoded as q * s[:, None].
# float32 and float16 saves still write /1, so older mineclip-jax versions read them.
NATIVE_FORMAT = "mineclip-jax/1"
NATIVE_FORMAT_INT8 = "mineclip-jax/2"
NATIVE_FORMATS = (NATIVE_FORMAT, NATIVE_FORMAT_INT8)
SAVE_DTYPES = ("float32", "float16", "int8")
# int8 storage: a float array is quantised when it is 2-D with at least this many elements (in
# MineCLIP-mini only the 49,408 x 64 token embedding; in the full model also the embedding and
# the larger ViT/text kernels); every other array is stored in float16.
INT8_MIN_ELEMENTS = 1_000_000
CONFIG_FILE = "config.json"
PARAMS_FILE = "params.msgpack"
TORCH_HINT = 'reading PyTorch checkpoints needs torch: pip install "mineclip-jax[torch]"'
PRETRAINED_DIR = Path(__file__).resolve().parent / "pretrained"
SHIPPED = ("mini",)  # models shipped inside the package, loadable by name
CHECKSUM_FILE = "SHA256SUMS"
EXPECTED_INPUTS = (
    "a PyTorch checkpoint (.pth/.ckpt: a zip archive or a pickle), a .npz of official-key "
    "arrays, a native checkpoint directory (config.json + params.msgpack), or a shipped "
    f"model name ({', '.join(repr(n) for n in SHIPPED)})"
)


def write_json(path: str | os.PathLike, obj) -> None:
    """Write JSON atomically (a temporary file renamed over `path`): a kill mid-write, or another
    process reading meanwhile, sees the old file or the new one, never a truncated one."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2) + "\n")
    os.replace(tmp, path)


def shipped_path(name: str) -> Path:
    """Directory of a model shipped with the package (e.g. "mini")."""
    if name not in SHIPPED:
        raise ValueError(f"no shipped model {name!r}; shipped: {list(SHIPPED)}")
    return PRETRAINED_DIR / name


def file_sha256(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_checksums(directory: str | os.PathLike, names=None) -> Path:
    """Write `SHA256SUMS` (sha256sum format) into `directory` for the files `names` (paths
    relative to it; default: a native checkpoint's config.json and params.msgpack). Written to a
    temporary file and renamed, so a kill leaves the old listing or the new one."""
    directory = Path(directory)
    names = (CONFIG_FILE, PARAMS_FILE) if names is None else names
    lines = [f"{file_sha256(directory / n)}  {n}" for n in names]
    tmp = directory / (CHECKSUM_FILE + ".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, directory / CHECKSUM_FILE)
    return directory / CHECKSUM_FILE


def write_tree_checksums(directory: str | os.PathLike) -> Path:
    """`SHA256SUMS` of every file under `directory` (an orbax checkpoint step, once committed),
    paths relative to it."""
    directory = Path(directory)
    names = sorted(
        str(f.relative_to(directory))
        for f in directory.rglob("*")
        if f.is_file() and not f.name.startswith(CHECKSUM_FILE)
    )
    return write_checksums(directory, names)


COPY_HINT = (
    "the checkpoint is damaged (a bad copy or disk): copy it again from its source, "
    "or save it again with save_checkpoint"
)
SHIPPED_HINT = "the shipped model is damaged: reinstall mineclip-jax"


def verify_checksums(directory: str | os.PathLike, hint: str = SHIPPED_HINT) -> None:
    """Raise if a file listed in `SHA256SUMS` is missing or differs; `hint` says what to do (the
    default: a damaged install)."""
    directory = Path(directory)
    listing = directory / CHECKSUM_FILE
    if not listing.is_file():
        raise FileNotFoundError(f"{listing} is missing; {hint}")
    for line in listing.read_text(errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            digest, name = line.split(maxsplit=1)
        except ValueError:
            raise CheckpointMismatchError(f"{listing} is damaged (line {line!r}); {hint}") from None
        path = directory / name.strip()
        if not path.is_file() or file_sha256(path) != digest:
            raise CheckpointMismatchError(
                f"{path} is missing or does not match its checksum in {listing}; {hint}"
            )


def read_json_file(path: str | os.PathLike, what: str = "checkpoint") -> Any:
    """A JSON file of a checkpoint, or an error naming the file when it is damaged."""
    path = Path(path)
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointMismatchError(
            f"{path} is damaged ({type(e).__name__}: {e}); it is not the JSON a {what} holds: "
            f"copy the {what} again from its source, or save it again"
        ) from None


def _sniff_file(path: Path) -> str:
    """ "torch", "npz" or raise: what a checkpoint file is, judged by its bytes, so that a file
    that is no checkpoint at all is named as such before torch is asked about it."""
    import zipfile

    with open(path, "rb") as f:
        head = f.read(4)
    if head.startswith(b"PK\x03\x04"):  # torch.save (since 1.6) and np.savez write zips
        try:
            with zipfile.ZipFile(path) as z:
                names = z.namelist()
        except zipfile.BadZipFile:
            names = []
        if any(n.endswith("data.pkl") for n in names):
            return "torch"
        if names and all(n.endswith(".npy") for n in names):
            return "npz"
        what = f"is a zip archive holding {names[:5]}" if names else "is a damaged zip archive"
    elif len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return "torch"  # legacy torch.save: a pickle stream (protocol 2-5)
    else:
        what = "is empty" if not head else f"starts with bytes {head!r}"
    raise CheckpointMismatchError(
        f"{path} is not a checkpoint: the file {what}; expected {EXPECTED_INPUTS}"
    )


def _import_torch():
    try:
        import torch
    except ImportError as e:
        raise ImportError(TORCH_HINT) from e
    return torch


def unwrap_state_dict(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The official-key state dict inside a loaded checkpoint object. A nested `state_dict`
    (Lightning) is taken, and keys with the `model.` prefix are kept with it stripped, as the
    official `load_ckpt` does; a plain state dict is returned as is."""
    if not isinstance(obj, Mapping):
        raise CheckpointMismatchError(
            f"expected a checkpoint dict or state dict, got {type(obj).__name__}"
        )
    sd = obj["state_dict"] if isinstance(obj.get("state_dict"), Mapping) else obj
    if any(isinstance(k, str) and k.startswith("model.") for k in sd):
        return {k[len("model.") :]: v for k, v in sd.items() if k.startswith("model.")}
    return dict(sd)


def read_torch_checkpoint(path: str | os.PathLike, *, weights_only: bool = True) -> dict:
    """torch.load a .pth/.ckpt on CPU and return its official-key state dict (NumPy arrays).

    `weights_only=True` (default) refuses pickled Python objects; set it to False only for a
    file you trust (PyTorch-Lightning checkpoints may pickle hyper-parameters)."""
    torch = _import_torch()
    try:
        obj = torch.load(str(path), map_location="cpu", weights_only=weights_only)
    except Exception as e:
        if weights_only and "weights_only" in str(e):
            raise RuntimeError(
                f"{path} contains pickled objects that torch refuses to load with "
                "weights_only=True; if you trust the file, call "
                "load_checkpoint(path, weights_only=False)"
            ) from e
        raise
    sd = unwrap_state_dict(obj)
    return {k: v.detach().cpu().float().numpy() for k, v in sd.items() if hasattr(v, "detach")}


def load_state_dict(
    state_dict: Mapping[str, Any], config: MineCLIPConfig | None = None, **config_overrides
) -> MineCLIPHandle:
    """A handle from official-key arrays; the config (attn vs avg, sizes) is inferred unless
    given. `config_overrides` (e.g. dtype="bfloat16") adjust the inferred config."""
    sd = unwrap_state_dict(state_dict)
    if config is None:
        config = infer_config(sd, **config_overrides)
    elif config_overrides:
        config = config.replace(**config_overrides)
    params = state_dict_to_params(sd, config)
    return MineCLIPHandle(config=config, params=jax.tree.map(np.asarray, params))


def quantize_int8(x) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric per-row int8 quantisation of a 2-D array: scale = max|row| / 127 (float32),
    q = round(row / scale) in [-127, 127]. An all-zero row gets scale 0 and q 0 (decoded as
    zeros). Dequantised, every element is within scale / 2 of its row's original value."""
    x = np.asarray(x, np.float32)
    if x.ndim != 2:
        raise ValueError(f"int8 storage quantises 2-D arrays per row, got shape {x.shape}")
    scale = (np.abs(x).max(axis=1) / np.float32(127)).astype(np.float32)
    safe = np.where(scale > 0, scale, np.float32(1))
    q = np.clip(np.rint(x / safe[:, None]), -127, 127).astype(np.int8)
    return q, scale


def dequantize_int8(q, scale) -> np.ndarray:
    """float32 q * scale per row (the inverse of `quantize_int8`, up to its rounding)."""
    return np.asarray(q, np.float32) * np.asarray(scale, np.float32)[:, None]


def _is_int8_table(x) -> bool:
    x = np.asarray(x)
    return x.ndim == 2 and x.size >= INT8_MIN_ELEMENTS and np.issubdtype(x.dtype, np.floating)


def _path_keys(path) -> list[str]:
    return [str(getattr(k, "key", k)) for k in path]


def _read_params(path: Path) -> Any:
    try:
        return serialization.msgpack_restore(path.read_bytes())
    except Exception as e:  # msgpack raises ValueError / ExtraData / its own errors
        raise CheckpointMismatchError(
            f"{path} cannot be read ({type(e).__name__}: {e}): the file is truncated or damaged; "
            f"save the checkpoint again (save_checkpoint) or copy it again from its source"
        ) from e


def _decode_int8(raw: Any, quantized: list, where: Path) -> Any:
    """Replace each {"int8": q, "scale": s} node listed in config.json by its float32 array."""
    for keys in quantized:
        parent, node = None, raw
        for k in keys:
            parent = node
            node = node.get(k) if isinstance(node, dict) else None
        ok = (
            isinstance(node, dict)
            and set(node) == {"int8", "scale"}
            and np.ndim(node["int8"]) == 2
            and np.shape(node["scale"]) == np.shape(node["int8"])[:1]
        )
        if not ok:
            raise CheckpointMismatchError(
                f"{where / PARAMS_FILE} does not hold the int8 array {'/'.join(keys)} that "
                f"{where / CONFIG_FILE} lists (an {{'int8', 'scale'}} pair of [rows, cols] and "
                f"[rows]); the checkpoint is damaged: save it again"
            )
        parent[keys[-1]] = dequantize_int8(node["int8"], node["scale"])
    return raw


def _load_native(directory: Path, config_overrides: dict) -> MineCLIPHandle:
    meta = read_json_file(directory / CONFIG_FILE)
    fmt = meta.get("format")
    if fmt not in NATIVE_FORMATS:
        raise CheckpointMismatchError(
            f"{directory / CONFIG_FILE} has format {fmt!r}, which this mineclip-jax cannot read "
            f"(it reads {', '.join(repr(f) for f in NATIVE_FORMATS)}); the checkpoint was written "
            f"by another (probably newer) mineclip-jax or is not a mineclip-jax checkpoint: "
            f"upgrade mineclip-jax (pip install -U mineclip-jax), or re-save the checkpoint with "
            f"save_checkpoint from the version that wrote it"
        )
    try:
        config = MineCLIPConfig.from_dict(meta["config"])
    except (KeyError, TypeError, ValueError) as e:
        raise CheckpointMismatchError(
            f"{directory / CONFIG_FILE} holds no valid model config ({type(e).__name__}: {e}); "
            f"the checkpoint is damaged: copy it again from its source, or save it again"
        ) from None
    if config_overrides:
        config = config.replace(**config_overrides)
    target = param_shapes(config)
    raw = _read_params(directory / PARAMS_FILE)
    if fmt == NATIVE_FORMAT_INT8:
        storage = meta.get("storage")
        if not isinstance(storage, dict) or not isinstance(storage.get("int8"), list):
            raise CheckpointMismatchError(
                f"{directory / CONFIG_FILE} has format {fmt!r} but no storage.int8 list of the "
                f"int8 arrays; the checkpoint is damaged: save it again"
            )
        raw = _decode_int8(raw, storage["int8"], directory)
    expected = {
        jax.tree_util.keystr(p): x.shape for p, x in jax.tree_util.tree_leaves_with_path(target)
    }
    got = {
        jax.tree_util.keystr(p): np.shape(x) for p, x in jax.tree_util.tree_leaves_with_path(raw)
    }
    if expected != got:
        missing = sorted(set(expected) - set(got))
        extra = sorted(set(got) - set(expected))
        wrong = sorted(k for k in set(expected) & set(got) if expected[k] != got[k])
        raise CheckpointMismatchError(
            f"{directory / PARAMS_FILE} does not match its config: missing {missing}, "
            f"unexpected {extra}, wrong shapes {wrong}"
        )
    params = serialization.from_state_dict(target, raw)
    # Weights stored in float16 or int8 (to ship small) load back as float32.
    return MineCLIPHandle(
        config=config,
        params=jax.tree.map(lambda x: np.asarray(x, np.float32), params),
        source=str(directory),
    )


def checkpoint_image_size(path_or_name: str | os.PathLike) -> tuple[int, int]:
    """The (H, W) frames a checkpoint's model takes, read without loading its weights: a shipped
    name or a native directory from its config.json, a released .pth/.npz the official 160x256.
    Lets an env be built at the model's frame size before the model is loaded."""
    name = str(path_or_name)
    if name in SHIPPED and not os.path.exists(name):
        directory = shipped_path(name)
    else:
        directory = Path(name).expanduser()
        if not directory.exists():
            raise FileNotFoundError(f"no checkpoint at {directory}; expected {EXPECTED_INPUTS}")
        if not directory.is_dir():
            return tuple(MineCLIPConfig().image_size)
    meta = read_json_file(directory / CONFIG_FILE)
    return tuple(MineCLIPConfig.from_dict(meta["config"]).image_size)


def load_checkpoint(
    path_or_state_dict: str | os.PathLike | Mapping[str, Any],
    config: MineCLIPConfig | None = None,
    *,
    weights_only: bool = True,
    **config_overrides,
) -> MineCLIPHandle:
    """Load MineCLIP weights from any supported source (see module doc) into a handle.

    Args:
      path_or_state_dict: file/dir path, or a mapping of official keys to arrays.
      config: the architecture; inferred from the weights when None.
      weights_only: passed to torch.load for .pth files (see `read_torch_checkpoint`).
      **config_overrides: e.g. dtype="bfloat16" to compute in bfloat16.
    """
    if isinstance(path_or_state_dict, Mapping):
        return load_state_dict(path_or_state_dict, config, **config_overrides)
    if isinstance(path_or_state_dict, str) and path_or_state_dict in SHIPPED:
        if os.path.exists(path_or_state_dict):
            raise ValueError(
                f"{path_or_state_dict!r} names both a shipped model and a path here; pass "
                f"./{path_or_state_dict} for the path"
            )
        directory = shipped_path(path_or_state_dict)
        verify_checksums(directory)
        if config is not None:
            raise ValueError("a shipped model carries its own config; pass overrides instead")
        return _load_native(directory, config_overrides)
    path = Path(path_or_state_dict).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"no checkpoint at {path}; expected {EXPECTED_INPUTS}")
    if path.is_dir():
        if not (path / CONFIG_FILE).is_file() or not (path / PARAMS_FILE).is_file():
            raise FileNotFoundError(
                f"{path} is a directory but not a native mineclip-jax checkpoint (it needs "
                f"{CONFIG_FILE} and {PARAMS_FILE}, as written by save_checkpoint)"
            )
        if config is not None:
            raise ValueError("a native checkpoint carries its own config; pass overrides instead")
        if (path / CHECKSUM_FILE).is_file():  # written by save_checkpoint: a copy is verified
            verify_checksums(path, hint=COPY_HINT)
        return _load_native(path, config_overrides)
    if _sniff_file(path) == "npz":
        with np.load(path) as data:
            sd = {k: data[k] for k in data.files}
    else:
        sd = read_torch_checkpoint(path, weights_only=weights_only)
    return load_state_dict(sd, config, **config_overrides)


def save_checkpoint(
    handle: MineCLIPHandle, directory: str | os.PathLike, dtype: str = "float32"
) -> Path:
    """Write `config.json` + `params.msgpack` + their `SHA256SUMS` into `directory` (created if
    needed); `load_checkpoint` verifies the checksums, so a damaged copy is refused.

    `dtype` is the storage: "float32"; "float16" (half the file); "int8": every 2-D float array
    of at least `INT8_MIN_ELEMENTS` elements (the token embedding) as int8 with a float32 scale
    per row (symmetric, `quantize_int8`), the rest float16 (the shipped mini model). Loading
    always gives float32."""
    if dtype not in SAVE_DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(map(repr, SAVE_DTYPES))}, got {dtype!r}")
    directory = Path(directory).expanduser()
    directory.mkdir(parents=True, exist_ok=True)
    host = jax.device_get(handle.params)
    meta: dict[str, Any] = {"format": NATIVE_FORMAT}
    if dtype == "int8":
        quantized = []

        def store(path, x):
            if _is_int8_table(x):
                quantized.append(_path_keys(path))
                q, scale = quantize_int8(x)
                return {"int8": q, "scale": scale}
            return np.asarray(x, np.float16)

        params = jax.tree_util.tree_map_with_path(store, host)
        meta = {"format": NATIVE_FORMAT_INT8, "storage": {"int8": quantized, "other": "float16"}}
    else:
        params = jax.tree.map(lambda x: np.asarray(x, dtype=dtype), host)
    (directory / PARAMS_FILE).write_bytes(serialization.msgpack_serialize(params))
    meta["config"] = handle.config.to_dict()
    (directory / CONFIG_FILE).write_text(json.dumps(meta, indent=2) + "\n")
    write_checksums(directory)  # load_checkpoint verifies them: a damaged copy is refused
    return directory


def export_state_dict(handle: MineCLIPHandle, *, aliases: bool = True) -> dict[str, np.ndarray]:
    """The handle's weights as an official-key NumPy state dict (what the official
    `MineCLIP.load_state_dict(strict=True)` accepts once converted to tensors)."""
    return params_to_state_dict(jax.device_get(handle.params), handle.config, aliases=aliases)


def save_torch_checkpoint(handle: MineCLIPHandle, path: str | os.PathLike) -> Path:
    """Write a `.pth` in the released layout ({'state_dict': {'model.' + key: tensor}}), alias
    keys sharing one tensor, loadable by the official `load_ckpt`."""
    torch = _import_torch()
    tensors: dict[int, Any] = {}
    state_dict = {}
    for key, array in export_state_dict(handle).items():
        if id(array) not in tensors:
            tensors[id(array)] = torch.from_numpy(np.array(array))
        state_dict["model." + key] = tensors[id(array)]
    path = Path(path).expanduser()
    torch.save({"state_dict": state_dict}, str(path))
    return path


def init_from_openai_clip(
    clip_state_dict: Mapping[str, Any], config: MineCLIPConfig | None = None, key=None
) -> MineCLIPHandle:
    """Start from OpenAI CLIP ViT-B/16 weights (the MineCLIP paper's initialisation): both
    towers and the logit scale come from CLIP (vision positions bicubically resized to the
    patch grid); the temporal encoder and adapters keep their random init."""
    config = MineCLIPConfig.attn() if config is None else config
    key = jax.random.key(0) if key is None else key
    base = params_to_state_dict(jax.device_get(init_params(config, key)), config, aliases=False)
    clip_sd = openai_clip_to_state_dict(clip_state_dict, config)
    unknown = sorted(set(clip_sd) - set(base))
    if unknown:
        raise CheckpointMismatchError(f"unexpected CLIP weights after renaming: {unknown[:20]}")
    base.update(clip_sd)
    return load_state_dict(base, config)

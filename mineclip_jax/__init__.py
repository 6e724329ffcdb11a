"""MineCLIP in JAX/Flax: the model, its tokenizer and checkpoint conversion.

import jax, mineclip_jax as mcj
mc = mcj.create(mcj.MineCLIPConfig.attn(), jax.random.key(0))   # random init
mc = mcj.load_checkpoint("attn.pth")                             # released weights
logits = mc.logits(mc.encode_video(frames), mc.encode_text(["shear a sheep"]))
"""

from mineclip_jax.checkpoint import (
    export_state_dict,
    init_from_openai_clip,
    load_checkpoint,
    load_state_dict,
    save_checkpoint,
    save_torch_checkpoint,
)
from mineclip_jax.config import MC_IMAGE_MEAN, MC_IMAGE_STD, MineCLIPConfig
from mineclip_jax.convert import (
    CheckpointMismatchError,
    infer_config,
    official_key_shapes,
    params_to_state_dict,
    resize_pos_embed,
    state_dict_to_params,
)
from mineclip_jax.handle import MineCLIPHandle, create, init_params, param_shapes
from mineclip_jax.model import MineCLIP, preprocess_frames
from mineclip_jax.tokenizer import tokenize

__all__ = [
    "CheckpointMismatchError",
    "export_state_dict",
    "infer_config",
    "init_from_openai_clip",
    "load_checkpoint",
    "load_state_dict",
    "official_key_shapes",
    "params_to_state_dict",
    "resize_pos_embed",
    "save_checkpoint",
    "save_torch_checkpoint",
    "state_dict_to_params",
    "MC_IMAGE_MEAN",
    "MC_IMAGE_STD",
    "MineCLIP",
    "MineCLIPConfig",
    "MineCLIPHandle",
    "create",
    "init_params",
    "param_shapes",
    "preprocess_frames",
    "tokenize",
]

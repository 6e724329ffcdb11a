"""An independent NumPy forward pass of MineCLIP written from the official PyTorch semantics.

It reads an *official-key* state dict (torch layouts: Linear weight [out, in], packed in_proj
rows q;k;v, conv OIHW) so it shares no code or layout choices with the Flax modules; tests
compare the two on a tiny config.
"""

from __future__ import annotations

import numpy as np

MEAN = np.array([0.3331, 0.3245, 0.3051])
STD = np.array([0.2439, 0.2493, 0.2873])


def layer_norm(x, weight, bias, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * weight + bias


def linear(x, sd, prefix, bias=True):
    y = x @ sd[prefix + ".weight"].T
    return y + sd[prefix + ".bias"] if bias else y


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def torch_mha(x, sd, prefix, heads, causal):
    """torch.nn.MultiheadAttention(batch_first=False semantics irrelevant here) on [N, L, W]."""
    n, length, width = x.shape
    hd = width // heads
    qkv = x @ sd[prefix + ".in_proj_weight"].T + sd[prefix + ".in_proj_bias"]
    q, k, v = qkv[..., :width], qkv[..., width : 2 * width], qkv[..., 2 * width :]
    q = q.reshape(n, length, heads, hd).transpose(0, 2, 1, 3) / np.sqrt(hd)
    k = k.reshape(n, length, heads, hd).transpose(0, 2, 1, 3)
    v = v.reshape(n, length, heads, hd).transpose(0, 2, 1, 3)
    scores = q @ k.transpose(0, 1, 3, 2)
    if causal:
        scores = scores + np.triu(np.full((length, length), -np.inf), 1)
    out = (softmax(scores) @ v).transpose(0, 2, 1, 3).reshape(n, length, width)
    return linear(out, sd, prefix + ".out_proj")


def quick_gelu_mlp(x, sd, prefix):
    h = linear(x, sd, prefix + ".c_fc")
    h = h * (1.0 / (1.0 + np.exp(-1.702 * h)))
    return linear(h, sd, prefix + ".c_proj")


def clip_block(x, sd, prefix, heads, causal):
    ln = lambda y, name: layer_norm(y, sd[f"{prefix}.{name}.weight"], sd[f"{prefix}.{name}.bias"])  # noqa: E731
    x = x + torch_mha(ln(x, "ln_1"), sd, prefix + ".attn", heads, causal)
    return x + quick_gelu_mlp(ln(x, "ln_2"), sd, prefix + ".mlp")


def preprocess(frames_uint8):
    return (frames_uint8.astype(np.float64) / 255.0 - MEAN) / STD


def vision(frames_uint8, sd, heads, layers, prefix="image_encoder"):
    """[N, H, W, 3] uint8 -> [N, D]."""
    x = preprocess(frames_uint8).transpose(0, 3, 1, 2)  # NCHW like torch
    w = sd[prefix + ".conv1.weight"]  # [C_out, 3, p, p]
    p = w.shape[-1]
    n, _, hgt, wid = x.shape
    gh, gw = hgt // p, wid // p
    patches = x.reshape(n, 3, gh, p, gw, p).transpose(0, 2, 4, 1, 3, 5).reshape(n, gh * gw, -1)
    tokens = patches @ w.reshape(w.shape[0], -1).T  # [N, gh*gw, C]
    cls = np.broadcast_to(sd[prefix + ".cls_token"], (n, 1, w.shape[0]))
    x = np.concatenate([cls, tokens], 1) + sd[prefix + ".pos_embed"]
    x = layer_norm(x, sd[prefix + ".ln_pre.weight"], sd[prefix + ".ln_pre.bias"])
    for i in range(layers):
        x = clip_block(x, sd, f"{prefix}.blocks.{i}", heads, causal=False)
    x = layer_norm(x[:, 0], sd[prefix + ".ln_post.weight"], sd[prefix + ".ln_post.bias"])
    return x @ sd[prefix + ".projection"]


def text(tokens, sd, heads, layers, prefix="clip_model.text_model"):
    """[N, 77] int -> [N, D]."""
    x = sd[prefix + ".token_embedding.weight"][tokens] + sd[prefix + ".pos_embed"]
    for i in range(layers):
        x = clip_block(x, sd, f"{prefix}.blocks.{i}", heads, causal=True)
    x = layer_norm(x, sd[prefix + ".ln_final.weight"], sd[prefix + ".ln_final.bias"])
    pooled = x[np.arange(len(tokens)), tokens.argmax(-1)]
    return pooled @ sd[prefix + ".projection"]


def temporal_attn(x, sd, depth, heads, prefix="temporal_encoder.attn.model"):
    """x-transformers 0.27.1 ContinuousTransformerWrapper(Encoder(ff_glu, ff_swish)) + mean."""
    b, length, dim = x.shape
    x = x + sd[prefix + ".pos_emb.emb.weight"][:length] * dim**-0.5
    for layer in range(2 * depth):
        p = f"{prefix}.attn_layers.layers.{layer}"
        h = layer_norm(x, sd[p + ".0.0.weight"], sd[p + ".0.0.bias"])
        if layer % 2 == 0:  # attention
            q = h @ sd[p + ".1.to_q.weight"].T
            k = h @ sd[p + ".1.to_k.weight"].T
            v = h @ sd[p + ".1.to_v.weight"].T
            dh = q.shape[-1] // heads
            q, k, v = (t.reshape(b, length, heads, dh).transpose(0, 2, 1, 3) for t in (q, k, v))
            att = softmax(q @ k.transpose(0, 1, 3, 2) * dh**-0.5) @ v
            out = att.transpose(0, 2, 1, 3).reshape(b, length, heads * dh)
            x = x + out @ sd[p + ".1.to_out.weight"].T
        else:  # GLU feed-forward: first half value, second half gate, SiLU
            proj = linear(h, sd, p + ".1.net.0.proj")
            value, gate = np.split(proj, 2, axis=-1)
            hidden = value * (gate / (1.0 + np.exp(-gate)))
            x = x + linear(hidden, sd, p + ".1.net.3")
    x = layer_norm(x, sd[prefix + ".norm.weight"], sd[prefix + ".norm.bias"])
    return x.mean(1)


def video_adapter(v, sd, layers):
    h = v
    for j in range(layers):
        if j > 0:
            h = np.maximum(h, 0.0)
        h = linear(h, sd, f"reward_head.video_adapter.{3 * j}")
    r = 1.0 / (1.0 + np.exp(-sd["reward_head.video_residual_weight"]))
    return r * v + (1.0 - r) * h


def logits(video_emb, text_emb, logit_scale):
    v = video_emb / np.linalg.norm(video_emb, axis=-1, keepdims=True)
    t = text_emb / np.linalg.norm(text_emb, axis=-1, keepdims=True)
    return np.exp(logit_scale) * v @ t.T


# ------------------------------------------------------------------ shared tiny test models
_HANDLES: dict = {}


def small_init_config():
    """One layer per tower and small frames: the cheapest config to compile an init for."""
    import mineclip_jax as mcj

    return mcj.MineCLIPConfig.tiny(vision_layers=1, text_layers=1, image_size=(32, 48))


def tiny_handle(pool: str = "attn"):
    """A tiny MineCLIP handle with random weights everywhere (LayerNorm scales and biases,
    biases, residual weight and logit scale too, unlike the init), cached per process so test
    modules share the compiled methods. Built from shapes alone: no init compilation."""
    if pool not in _HANDLES:
        import jax

        import mineclip_jax as mcj

        cfg = mcj.MineCLIPConfig.tiny(pool=pool)
        rng = np.random.default_rng(2 if pool == "attn" else 3)

        def leaf(path, shape):
            name = path[-1].key
            if name == "scale":  # LayerNorm gain around 1
                value = 1.0 + 0.1 * rng.standard_normal(shape.shape)
            elif name == "logit_scale":
                value = np.log(1 / 0.07) + 0.1 * rng.standard_normal()
            elif len(shape.shape) >= 2:
                value = rng.standard_normal(shape.shape) / np.sqrt(shape.shape[-2])
            else:
                value = 0.5 * rng.standard_normal(shape.shape)
            return np.asarray(value, np.float32)

        params = jax.tree_util.tree_map_with_path(leaf, mcj.param_shapes(cfg))
        _HANDLES[pool] = mcj.MineCLIPHandle(cfg, params)
    return _HANDLES[pool]

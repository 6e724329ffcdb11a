"""CLIP BPE tokens for the data builders.

The contract token format is MineCLIP's: int32 `[N, 77]`, SOT (49406), at most 75 BPE ids, EOT
(49407), zero padding. `mineclip_jax.tokenize` is the project's tokenizer; until it is importable
(or on a checkout without it) the same ids come from `instant_clip_tokenizer`, which the facts
file found identical to the official tokenization on all MineDojo prompts.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

CONTEXT_LENGTH = 77  # SOT + 75 BPE ids + EOT.
SOT_TOKEN = 49406
EOT_TOKEN = 49407


@functools.cache
def _instant_tokenizer():
    try:
        import instant_clip_tokenizer
    except ImportError as e:  # wheels exist for CPython <= 3.12 only
        raise ImportError(
            "No CLIP tokenizer: neither mineclip_jax.tokenize nor instant_clip_tokenizer is "
            "importable. Install mineclip-jax's dependencies (pip install -e .) on Python <= 3.12."
        ) from e
    return instant_clip_tokenizer.Tokenizer()


def _project_tokenize():
    try:
        import mineclip_jax
    except ImportError:
        return None
    return getattr(mineclip_jax, "tokenize", None)


def tokenize(texts: Sequence[str]) -> np.ndarray:
    """Texts -> int32 `[N, 77]` CLIP tokens (SOT, ids, EOT, zero pad; long texts cut to 75 ids)."""
    texts = [str(t) for t in texts]
    project_tokenize = _project_tokenize()
    if project_tokenize is not None:
        rows = project_tokenize(texts, truncate=True)  # transcripts are cut, as documented
        return np.asarray(rows, dtype=np.int32).reshape(len(texts), -1)
    if not texts:
        return np.zeros((0, CONTEXT_LENGTH), np.int32)
    raw = _instant_tokenizer().tokenize_batch(texts, CONTEXT_LENGTH)
    return np.asarray(raw, dtype=np.int32)


def bpe_lengths(words: Sequence[str]) -> np.ndarray:
    """Number of BPE ids of each word alone (no SOT/EOT), int32 `[len(words)]`.

    CLIP pre-splits text on whitespace and punctuation before BPE, so the length of a
    space-joined text is the sum of its words' lengths; the clip sampler grows text with that.
    """
    if not len(words):
        return np.zeros((0,), np.int32)
    unique = sorted(set(words))
    counts = np.count_nonzero(tokenize(unique), axis=-1) - 2  # drop SOT and EOT
    by_word = dict(zip(unique, counts.tolist()))
    return np.asarray([by_word[w] for w in words], dtype=np.int32)

"""The MineCLIP tokenizer: CLIP byte-level BPE, ids laid out as the official `tokenize_batch`.

Row layout (int32 [N, 77]): position 0 = SOT 49406, then the first 75 BPE ids of the prompt,
then EOT 49407 right after them, zeros (pad id 0) after that. A prompt over 75 ids raises, as
OpenAI CLIP's tokenizer does, unless `truncate=True` cuts it to SOT + 75 + EOT (the official
MineCLIP `tokenize_batch`; data pipelines cutting transcripts ask for it). Text normalisation follows the Hugging Face fast CLIP tokenizer the official
code uses: Unicode NFC, runs of whitespace -> one space, lower case; no ftfy, no HTML unescape.

Two interchangeable backends:

* `instant-clip-tokenizer` (Rust, BPE data built in; wheels for CPython <= 3.12) - the default;
* `BPETokenizer`, a pure-Python byte-level BPE over CLIP's `bpe_simple_vocab_16e6.txt.gz`,
  used when the former is not installed (e.g. Python >= 3.13). The merges file is read from
  `bpe_path`, the `MINECLIP_JAX_CLIP_BPE` environment variable, or a package that ships it
  (`open_clip_torch`, OpenAI `clip`); `pip install --no-deps open_clip_torch` provides it
  without importing torch.
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
import os
import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mineclip_jax.config import EOT_TOKEN, PAD_TOKEN, SOT_TOKEN

CONTEXT_LENGTH = 77
BPE_ENV_VAR = "MINECLIP_JAX_CLIP_BPE"
BPE_FILENAME = "bpe_simple_vocab_16e6.txt.gz"
# (package, path inside it) of maintained packages that ship CLIP's BPE merges.
_BPE_PACKAGES = (("open_clip", BPE_FILENAME), ("clip", BPE_FILENAME))
NUM_MERGES = 49152 - 256 - 2  # CLIP keeps the first 48,894 merges of the 16e6 file.

_WHITESPACE = re.compile(r"\s+")
_SPECIAL_TOKENS = {"<|startoftext|>": SOT_TOKEN, "<|endoftext|>": EOT_TOKEN}
_SPECIAL_SPLIT = re.compile(r"(<\|startoftext\|>|<\|endoftext\|>)")
_CONTRACTIONS = ("'s", "'t", "'re", "'ve", "'m", "'ll", "'d")


def normalize_text(text: str) -> str:
    """HF CLIP normaliser: NFC, whitespace runs -> ' ', lower case."""
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFC", text)).lower()


def _char_class(c: str) -> str:
    if c.isspace():
        return "space"
    major = unicodedata.category(c)[0]
    return "letter" if major == "L" else "number" if major == "N" else "other"


def pretokenize(text: str) -> list[str]:
    """CLIP's pre-split of lower-cased text, i.e. the pattern
    `'s|'t|'re|'ve|'m|'ll|'d|\\p{L}+|\\p{N}|[^\\s\\p{L}\\p{N}]+` applied left to right (written
    as a scanner over Unicode categories so no third-party regex engine is needed)."""
    words, i, n = [], 0, len(text)
    while i < n:
        contraction = next((c for c in _CONTRACTIONS if text.startswith(c, i)), None)
        if contraction is not None:
            words.append(contraction)
            i += len(contraction)
            continue
        kind = _char_class(text[i])
        if kind == "space":
            i += 1
            continue
        if kind == "number":  # digits are split one by one
            words.append(text[i])
            i += 1
            continue
        j = i + 1
        while j < n and _char_class(text[j]) == kind:
            j += 1
        words.append(text[i:j])
        i = j
    return words


@functools.lru_cache(maxsize=1)
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2/CLIP reversible byte -> printable unicode map (256 entries)."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("\xa1"), ord("\xac") + 1))
        + list(range(ord("\xae"), ord("\xff") + 1))
    )
    chars = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return dict(zip(printable, (chr(c) for c in chars)))


class BPETokenizer:
    """Pure-Python CLIP byte-level BPE over a merges file (no native dependency)."""

    def __init__(self, bpe_path: str | os.PathLike, num_merges: int = NUM_MERGES):
        path = Path(bpe_path)
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as f:
            lines = f.read().split("\n")
        # Line 0 is a version header; CLIP uses the next NUM_MERGES merges.
        merges = [tuple(line.split()) for line in lines[1 : num_merges + 1]]
        if len(merges) != num_merges or any(len(m) != 2 for m in merges):
            raise ValueError(
                f"{path} is not CLIP's BPE merges file ({BPE_FILENAME}): expected "
                f"{num_merges} merge lines of two symbols after a header line"
            )
        self.byte_encoder = bytes_to_unicode()
        vocab = list(self.byte_encoder.values())
        vocab += [v + "</w>" for v in vocab]
        vocab += ["".join(m) for m in merges]
        vocab += list(_SPECIAL_TOKENS)
        self.encoder = {tok: i for i, tok in enumerate(vocab)}
        self.bpe_ranks = {m: i for i, m in enumerate(merges)}
        self._cache: dict[str, list[int]] = {}

    def _bpe(self, word: str) -> list[int]:
        """Token ids of one pre-tokenised, byte-mapped word (ending in '</w>')."""
        cached = self._cache.get(word)
        if cached is not None:
            return cached
        symbols = list(word[:-1]) + [word[-1] + "</w>"]
        while len(symbols) > 1:
            pairs = {(a, b) for a, b in zip(symbols, symbols[1:])}
            best = min(pairs, key=lambda p: self.bpe_ranks.get(p, float("inf")))
            if best not in self.bpe_ranks:
                break
            merged, i = [], 0
            while i < len(symbols):
                if i < len(symbols) - 1 and (symbols[i], symbols[i + 1]) == best:
                    merged.append(symbols[i] + symbols[i + 1])
                    i += 2
                else:
                    merged.append(symbols[i])
                    i += 1
            symbols = merged
        ids = [self.encoder[s] for s in symbols]
        if len(self._cache) < 100_000:
            self._cache[word] = ids
        return ids

    def encode(self, text: str) -> list[int]:
        """BPE ids of a prompt, without SOT/EOT."""
        ids: list[int] = []
        for piece in _SPECIAL_SPLIT.split(normalize_text(text)):
            if piece in _SPECIAL_TOKENS:
                ids.append(_SPECIAL_TOKENS[piece])
                continue
            for word in pretokenize(piece):
                mapped = "".join(self.byte_encoder[b] for b in word.encode("utf-8"))
                ids.extend(self._bpe(mapped))
        return ids


def find_bpe_file(bpe_path: str | os.PathLike | None = None) -> Path:
    """Locate CLIP's BPE merges file: argument, $MINECLIP_JAX_CLIP_BPE, or a package that
    ships it (found without importing the package, so torch is never imported)."""
    candidates: list[Path] = []
    if bpe_path is not None:
        candidates.append(Path(bpe_path))
    if os.environ.get(BPE_ENV_VAR):
        candidates.append(Path(os.environ[BPE_ENV_VAR]))
    for package, relpath in _BPE_PACKAGES:
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.submodule_search_locations:
            candidates += [Path(loc) / relpath for loc in spec.submodule_search_locations]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(
        "No CLIP tokenizer available: `instant-clip-tokenizer` is not installed (it has wheels "
        "for Python <= 3.12) and CLIP's BPE merges file was not found. Either "
        "`pip install instant-clip-tokenizer`, or `pip install --no-deps open_clip_torch` "
        f"(ships {BPE_FILENAME}), or point ${BPE_ENV_VAR} at a copy of {BPE_FILENAME}."
    )


@functools.lru_cache(maxsize=1)
def _instant_tokenizer():
    try:
        import instant_clip_tokenizer
    except ImportError:
        return None
    return instant_clip_tokenizer.Tokenizer()


@functools.lru_cache(maxsize=4)
def _python_tokenizer(bpe_path: str | None) -> BPETokenizer:
    return BPETokenizer(find_bpe_file(bpe_path))


def _encode_instant(instant, text: str) -> list[int]:
    # HF normalisation first (NFC + whitespace collapse: instant-clip-tokenizer does neither),
    # and special-token strings map to their ids as in the HF tokenizer.
    ids: list[int] = []
    for piece in _SPECIAL_SPLIT.split(normalize_text(text)):
        if piece in _SPECIAL_TOKENS:
            ids.append(_SPECIAL_TOKENS[piece])
        elif piece:
            ids.extend(int(i) for i in instant.encode(piece))
    return ids


def _check_lengths(texts, ids_per_text, context_length: int) -> None:
    fit = context_length - 2
    long = [(t, len(ids)) for t, ids in zip(texts, ids_per_text) if len(ids) > fit]
    if long:
        text, n = long[0]
        shown = text if len(text) <= 60 else text[:57] + "..."
        raise ValueError(
            f"{len(long)} prompt(s) too long for the context: {shown!r} is {n} tokens, over the "
            f"{fit} that fit in {context_length} (SOT + {fit} + EOT); shorten it, or pass "
            f"truncate=True to cut it to its first {fit} tokens"
        )


def _rows_from_ids(ids_per_text: Sequence[Sequence[int]], context_length: int) -> np.ndarray:
    tokens = np.full((len(ids_per_text), context_length), PAD_TOKEN, dtype=np.int32)
    tokens[:, 0] = SOT_TOKEN
    for row, ids in enumerate(ids_per_text):
        ids = list(ids)[: context_length - 2]
        tokens[row, 1 : len(ids) + 1] = ids
        tokens[row, len(ids) + 1] = EOT_TOKEN
    return tokens


def tokenize(
    texts: str | Sequence[str],
    context_length: int = CONTEXT_LENGTH,
    *,
    backend: str = "auto",
    bpe_path: str | os.PathLike | None = None,
    truncate: bool = False,
) -> np.ndarray:
    """Prompts -> int32 [N, context_length] exactly as the official MineCLIP tokenization.

    Args:
      texts: a prompt or a sequence of prompts.
      context_length: row length (77 for MineCLIP); SOT + up to context_length - 2 ids + EOT.
      backend: "auto" (instant-clip-tokenizer if installed, else pure Python), "instant"
        or "python".
      bpe_path: CLIP BPE merges file for the pure-Python backend (optional, see module doc).
      truncate: cut prompts over context_length - 2 ids to that many (False: raise, naming
        the prompt and its length).
    """
    if isinstance(texts, str):
        texts = [texts]
    texts = list(texts)
    bad = [type(t).__name__ for t in texts if not isinstance(t, str)]
    if bad:
        raise TypeError(f"tokenize expects str or a sequence of str, got elements of type {bad}")
    if context_length < 2:
        raise ValueError(f"context_length must be >= 2 (SOT + EOT), got {context_length}")
    if backend not in ("auto", "instant", "python"):
        raise ValueError(f"backend must be 'auto', 'instant' or 'python', got {backend!r}")
    instant = _instant_tokenizer() if backend in ("auto", "instant") else None
    if backend == "instant" and instant is None:
        raise ImportError(
            "backend='instant' needs `pip install instant-clip-tokenizer` (CPython <= 3.12)"
        )
    if instant is not None:
        ids = [_encode_instant(instant, t) for t in texts]
    else:
        encoder = _python_tokenizer(None if bpe_path is None else str(bpe_path))
        ids = [encoder.encode(t) for t in texts]
    if not truncate:
        _check_lengths(texts, ids, context_length)
    return _rows_from_ids(ids, context_length)

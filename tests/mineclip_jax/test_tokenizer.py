"""The MineCLIP tokenizer: official row layout, known ids, normalisation, and agreement of the
instant-clip-tokenizer and pure-Python BPE backends on a few hundred generated prompts."""

import gzip
import itertools

import numpy as np
import pytest

import mineclip_jax as mcj
from mineclip_jax import tokenizer as tok

SOT, EOT = 49406, 49407


def generated_prompts() -> list[str]:
    """~350 varied prompts: task sentences, case, punctuation, digits, contractions, unicode,
    whitespace runs, HTML entities, special-token strings and over-long text."""
    verbs = [
        "shear",
        "milk",
        "hunt",
        "combat",
        "find",
        "harvest",
        "craft",
        "build",
        "Mine",
        "SMELT",
    ]
    objects = [
        "a sheep",
        "a cow",
        "the Zombie",
        "2 spiders",
        "a nether portal",
        "64 oak logs",
        "iron_ingot",
        "a diamond pickaxe",
        "wool (white)",
        "the ender-dragon",
    ]
    tails = [
        "",
        " in the night",
        " with a bow!",
        "  near   water",
        "\tunder a tree\n",
        "...",
        " at y=12, x=-300",
        " & survive",
        "?!",
        " 'quickly'",
    ]
    prompts = [f"{v} {o}{t}" for v, o, t in itertools.product(verbs, objects, tails)][::3]
    prompts += [
        "",
        " ",
        "\n\t  \r\n",
        "a",
        "A",
        "Hello World",
        "HELLO   world",
        "don't you're we've i'm he'll she'd it's",
        "café crème brûlée",
        "cafe\u0301",
        "ﬁre",
        "naïve coöperation",
        "Zürich ÄÖÜ ß",
        "日本語のテキスト",
        "Minecraft 马 🐄🐑⛏️",
        "emoji 😀😀😀",
        "3.14159 1,000,000 2022-07-31",
        "x²+y²=z²",
        "&amp; &lt;b&gt; &#39;",
        "<|startoftext|> hi <|endoftext|>",
        "https://minedojo.org/?q=a+b#c",
        "e-mail: steve@minecraft.net",
        "tabs\tand\nnewlines\r\nmixed",
        "  leading and trailing  ",
        "UPPER lower MiXeD",
        "punctuation!!! ??? ... ,,, ;;; ---",
        "[brackets] {braces} (parens)",
        "a" * 200,
        "word " * 100,
        "1234567890" * 10,
        "🐑" * 80,
        " ".join(f"token{i}" for i in range(120)),
    ]
    return prompts


# ----------------------------------------------------------------------------- known ids
def test_known_ids_and_row_layout():
    rows = mcj.tokenize(["a photo of a cat", "hello world"])
    assert rows.dtype == np.int32 and rows.shape == (2, 77)
    np.testing.assert_array_equal(rows[0, :7], [SOT, 320, 1125, 539, 320, 2368, EOT])
    np.testing.assert_array_equal(rows[1, :4], [SOT, 3306, 1002, EOT])
    assert np.all(rows[0, 7:] == 0) and np.all(rows[1, 4:] == 0)  # pad id 0, not EOT
    assert mcj.tokenize("a").tolist()[0][:3] == [SOT, 320, EOT]  # 'a</w>' = 256 + (97 - 33)
    empty = mcj.tokenize([""])[0]
    assert empty[:2].tolist() == [SOT, EOT] and not empty[2:].any()


def test_truncation_to_75_plus_2():
    row = mcj.tokenize("a " * 200, truncate=True)[0]  # asked for: cut to SOT + 75 + EOT
    assert row[0] == SOT and row[76] == EOT and np.all(row[1:76] == 320)
    exact = mcj.tokenize("a " * 75)[0]
    np.testing.assert_array_equal(exact, row)
    short = mcj.tokenize("a " * 74)[0]
    assert short[75] == EOT and short[76] == 0
    assert int(np.argmax(row)) == 76  # EOT pooling finds it


def test_normalisation_whitespace_case_nfc():
    base = mcj.tokenize("shear a sheep")
    for variant in ["  Shear   a SHEEP ", "shear\ta\nsheep", "SHEAR A SHEEP\r\n"]:
        np.testing.assert_array_equal(mcj.tokenize(variant), base)
    np.testing.assert_array_equal(mcj.tokenize("cafe\u0301"), mcj.tokenize("caf\u00e9"))
    # HF tokenizer behaviour (no HTML unescape): '&amp;' stays '&', 'amp', ';'.
    assert mcj.tokenize("&amp;")[0, 1:5].tolist() == [261, 6259, 282, EOT]


def test_context_length_and_bad_input():
    cut = mcj.tokenize(["x y z"], context_length=4, truncate=True)
    assert cut[0].tolist() == [SOT, 343, 344, EOT]
    with pytest.raises(TypeError, match="sequence of str"):
        mcj.tokenize(["ok", 3])
    with pytest.raises(ValueError, match="backend"):
        mcj.tokenize("x", backend="hf")


# ---------------------------------------------------------------- pure-Python BPE backend
def test_pretokenize_hand_split():
    assert tok.pretokenize("don't stop!!'s 42x café") == [
        "don",
        "'t",
        "stop",
        "!!'",
        "s",
        "4",
        "2",
        "x",
        "café",
    ]
    assert tok.pretokenize("i'll  we're ...'ve") == ["i", "'ll", "we", "'re", "...'", "ve"]
    assert tok.pretokenize("日本3") == ["日本", "3"]


def test_python_bpe_on_a_hand_made_merges_file(tmp_path):
    path = tmp_path / "merges.txt.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("#version: test\nh e\nl o</w>\nl lo</w>\nhe llo</w>\n")
    bpe = tok.BPETokenizer(path, num_merges=4)
    # Merge ids start after the 512 byte symbols: he=512, lo</w>=513, llo</w>=514, hello</w>=515.
    assert bpe.encode("hello") == [515]
    assert bpe.encode("HELLO hel") == [515, 512, 331]  # 'l</w>' = 256 + (108 - 33)
    assert bpe.encode("a <|endoftext|>") == [320, EOT]
    with pytest.raises(ValueError, match="not CLIP's BPE merges file"):
        tok.BPETokenizer(path)  # the real file has 48,894 merges


def test_missing_bpe_file_error_names_the_fix(monkeypatch, tmp_path):
    monkeypatch.setattr(tok, "_BPE_PACKAGES", ())
    monkeypatch.delenv(tok.BPE_ENV_VAR, raising=False)
    with pytest.raises(FileNotFoundError, match="pip install instant-clip-tokenizer"):
        tok.find_bpe_file(tmp_path / "absent.txt.gz")


def test_backends_agree_on_generated_prompts():
    # The test command installs CLIP's BPE file (`pip install --no-deps open_clip_torch`); without
    # it this raises FileNotFoundError naming that fix.
    bpe_file = tok.find_bpe_file()
    prompts = generated_prompts()
    assert len(prompts) >= 300
    instant = mcj.tokenize(prompts, backend="instant", truncate=True)
    python = mcj.tokenize(prompts, backend="python", bpe_path=bpe_file, truncate=True)
    mismatched = [p for p, a, b in zip(prompts, instant, python) if not np.array_equal(a, b)]
    assert not mismatched, mismatched[:5]
    assert np.all(instant[:, 0] == SOT) and np.all((instant == EOT).sum(1) >= 1)

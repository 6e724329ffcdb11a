"""MineCLIP training: loss and retrieval vs NumPy, LR/trainable trees, tiny end-to-end run."""

import dataclasses
import json
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow_datasets as tfds

import mineclip_jax as mcj
from mineclip_jax import train as tr

COLOURS = ["red", "green", "blue", "yellow"]
RGB = np.array([[200, 30, 30], [30, 200, 30], [30, 30, 200], [200, 200, 30]], np.uint8)


class TinyClips(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """Clips of one flat colour (plus noise) captioned with the colour: learnable fast."""

    VERSION = tfds.core.Version("1.0.0")

    @tfds.core.utils.classproperty
    @classmethod
    def code_path(cls):
        return None  # no checksums.tsv lookup for a local builder

    def _info(self):
        return self.dataset_info_from_configs(
            features=tfds.features.FeaturesDict(
                {
                    "frames": tfds.features.Tensor(
                        shape=(16, 160, 256, 3),
                        dtype=np.uint8,
                        encoding=tfds.features.Encoding.ZLIB,
                    ),
                    "tokens": tfds.features.Tensor(shape=(77,), dtype=np.int32),
                    "text": tfds.features.Text(),
                    "clip_id": tfds.features.Text(),
                    "start_s": tfds.features.Scalar(dtype=np.float32),
                    "end_s": tfds.features.Scalar(dtype=np.float32),
                }
            )
        )

    def _split_generators(self, dl_manager):
        return {"train": self._generate_examples(12, 0), "test": self._generate_examples(8, 1)}

    def _generate_examples(self, n, seed):
        rng = np.random.default_rng(seed)
        for i in range(n):
            c = i % len(COLOURS)
            noise = rng.integers(-20, 21, size=(16, 160, 256, 3))
            frames = np.clip(RGB[c].astype(int) + noise, 0, 255).astype(np.uint8)
            text = f"a {COLOURS[c]} world"
            yield (
                f"{seed}-{i}",
                {
                    "frames": frames,
                    "tokens": mcj.tokenize([text])[0],
                    "text": text,
                    "clip_id": f"clip{seed}-{i}",
                    "start_s": float(i),
                    "end_s": float(i) + 8.0,
                },
            )


@pytest.fixture(scope="module")
def dataset_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("tfds")
    builder = TinyClips(data_dir=str(root), file_format="array_record")
    builder.download_and_prepare()
    return builder.data_path


# ------------------------------------------------------------------------ pure functions
def _np_log_softmax(x, axis):
    x = x - x.max(axis=axis, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=axis, keepdims=True))


@pytest.mark.parametrize("use_jit", [False, True])
def test_contrastive_loss_vs_numpy(use_jit):
    logits = np.random.default_rng(0).normal(scale=3.0, size=(6, 6)).astype(np.float32)
    fn = jax.jit(tr.contrastive_loss) if use_jit else tr.contrastive_loss
    got = float(fn(jnp.asarray(logits)))
    d = np.arange(6)
    ref = -0.5 * (_np_log_softmax(logits, 1)[d, d].mean() + _np_log_softmax(logits, 0)[d, d].mean())
    assert got == pytest.approx(ref, rel=1e-5)
    # Perfectly separated pairs with a large scale: loss near 0.
    assert float(fn(jnp.eye(4) * 100.0)) < 1e-6


def test_retrieval_metrics_vs_loop():
    rng = np.random.default_rng(1)
    v = rng.normal(size=(20, 8))
    t = v + rng.normal(scale=1.5, size=(20, 8))
    got = tr.retrieval_metrics(v, t)
    vn = v / np.linalg.norm(v, axis=1, keepdims=True)
    tn = t / np.linalg.norm(t, axis=1, keepdims=True)
    sim = vn @ tn.T
    for k in (1, 5):
        t2v = np.mean([np.argsort(-sim[:, i]).tolist().index(i) < k for i in range(20)])
        v2t = np.mean([np.argsort(-sim[i, :]).tolist().index(i) < k for i in range(20)])
        assert got[f"t2v_R@{k}"] == pytest.approx(t2v)
        assert got[f"v2t_R@{k}"] == pytest.approx(v2t)
    assert 0 < got["t2v_R@1"] < got["t2v_R@5"] <= 1  # a non-trivial case
    # Hand case: text 0 matches video 1 better than video 0.
    v = np.array([[1.0, 0.0], [0.0, 1.0]])
    t = np.array([[0.1, 1.0], [0.0, 1.0]])
    got = tr.retrieval_metrics(v, t, ks=(1,))
    assert got["t2v_R@1"] == 0.5  # text 1 -> video 1 ok; text 0 -> video 1 wrong
    assert got["v2t_R@1"] == 1.0  # video 0: (0.0995, 0) -> text 0; video 1: (0.995, 1) -> text 1


def test_batch_indices_epochs_and_errors():
    seen = np.concatenate([tr.batch_indices(10, 3, s, seed=0) for s in range(3)])
    assert len(set(seen.tolist())) == 9  # one epoch: no repeats, remainder dropped
    np.testing.assert_array_equal(tr.batch_indices(10, 3, 4, 0), tr.batch_indices(10, 3, 4, 0))
    assert not np.array_equal(tr.batch_indices(10, 3, 0, 0), tr.batch_indices(10, 3, 3, 0))
    with pytest.raises(ValueError, match="batch_size"):
        tr.batch_indices(4, 8, 0, 0)


@pytest.fixture(scope="module")
def tiny_params():
    cfg = mcj.MineCLIPConfig.tiny(pool="attn", vision_layers=4, text_layers=3)
    return cfg, jax.eval_shape(lambda k: mcj.init_params(cfg, k), jax.random.key(0))


def test_trainable_mask_last_two_layers(tiny_params):
    cfg, params = tiny_params
    mask = tr.trainable_mask(params, cfg, last_layers=2)
    img, txt = mask["image_encoder"], mask["text_encoder"]
    assert not img["blocks_0"]["ln_1"]["scale"] and not img["blocks_1"]["mlp"]["c_fc"]["kernel"]
    assert img["blocks_2"]["ln_1"]["scale"] and img["blocks_3"]["ln_2"]["bias"]
    assert img["projection"] and img["ln_post"]["scale"]
    assert not img["conv1"]["kernel"] and not img["pos_embed"] and not img["cls_token"]
    assert not txt["blocks_0"]["ln_1"]["scale"] and txt["blocks_1"]["ln_1"]["scale"]
    assert not txt["token_embedding"]["embedding"] and txt["ln_final"]["scale"]
    assert mask["logit_scale"] and all(jax.tree.leaves(mask["temporal_encoder"]))
    assert all(jax.tree.leaves(tr.trainable_mask(params, cfg, last_layers=0)))


def test_lr_multipliers_layer_decay(tiny_params):
    cfg, params = tiny_params
    tc = tr.TrainConfig(data=".", out=".", pretrained_lr_mult=0.5, layer_decay=0.8)
    m = tr.lr_multipliers(params, cfg, pretrained=True, cfg=tc)
    img = m["image_encoder"]
    assert img["projection"] == pytest.approx(0.5)
    assert img["blocks_3"]["ln_1"]["scale"] == pytest.approx(0.5 * 0.8)  # depth L - i = 1
    assert img["blocks_0"]["ln_1"]["scale"] == pytest.approx(0.5 * 0.8**4)
    assert img["conv1"]["kernel"] == pytest.approx(0.5 * 0.8**5)  # embeddings: L + 1
    assert m["text_encoder"]["blocks_2"]["ln_1"]["scale"] == pytest.approx(0.5 * 0.8)
    assert m["logit_scale"] == 1.0 and m["video_residual_weight"] == 1.0
    assert set(jax.tree.leaves(tr.lr_multipliers(params, cfg, pretrained=False, cfg=tc))) == {1.0}


def test_random_resized_crop():
    crop_fn = jax.jit(tr.random_resized_crop, static_argnums=2)
    frames = jnp.asarray(np.random.default_rng(0).integers(0, 256, (2, 3, 32, 48, 3)), jnp.uint8)
    same = crop_fn(jax.random.key(0), frames, min_area=1.0)
    np.testing.assert_allclose(np.asarray(same), np.asarray(frames, np.float32), atol=1e-3)
    crop = np.asarray(crop_fn(jax.random.key(1), frames, min_area=0.5))
    assert crop.shape == frames.shape and 0 <= crop.min() and crop.max() <= 255
    # Temporally consistent: a clip whose frames are identical stays identical after cropping.
    still = jnp.broadcast_to(frames[:, :1], frames.shape)
    out = np.asarray(crop_fn(jax.random.key(2), still, min_area=0.5))
    np.testing.assert_allclose(out[:, 0], out[:, 2], atol=1e-4)


def test_open_split_rejects_bad_directories(tmp_path):
    with pytest.raises(FileNotFoundError, match="dataset_info.json"):
        tr.open_split(tmp_path, "train")


# ------------------------------------------------------------------------- end to end
def test_train_end_to_end_and_resume(dataset_dir, tmp_path, capsys):
    cfg = tr.TrainConfig(
        data=dataset_dir,
        out=tmp_path / "run",
        config="tiny",
        pool="avg",
        steps=6,
        batch_size=4,
        lr=2e-3,
        warmup_steps=1,
        crop_min_area=0.9,
        eval_batch_size=8,
        ckpt_every=3,
        log_every=2,
        progress=False,
    )
    source = tr.open_split(dataset_dir, "train")
    assert len(source) == 12

    def train_loss(handle):
        v, t = tr.embed_split(handle.module, handle.params, source, 12)
        return float(tr.contrastive_loss(handle.logits(v, t)))

    init = mcj.create(mcj.MineCLIPConfig.tiny(pool="avg"), jax.random.key(cfg.seed))
    handle, results = tr.train(cfg)
    assert "t2v_R@1" in capsys.readouterr().out
    assert train_loss(handle) < train_loss(init) - 0.1
    assert results["num_clips"] == 8
    loaded = mcj.load_checkpoint(cfg.out / "model")
    assert loaded.config == handle.config
    for a, b in zip(jax.tree.leaves(loaded.params), jax.tree.leaves(handle.params)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    meta = json.loads((cfg.out / "train_config.json").read_text())
    assert meta["model"]["pool"] == "avg" and not meta["pretrained"]

    # Interrupted after step 3: the rerun resumes there and ends where the full run did.
    ckpts = cfg.out / "checkpoints"
    assert sorted(int(p.name) for p in ckpts.iterdir() if p.name.isdigit()) == [3, 6]
    shutil.rmtree(ckpts / "6")
    resumed, _ = tr.train(dataclasses.replace(cfg, resume=True))
    assert "resumed" in capsys.readouterr().out
    for a, b in zip(jax.tree.leaves(resumed.params), jax.tree.leaves(handle.params)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)

    # A time limit stops after the step that crosses it, with a checkpoint to resume from.
    # (Its model saved with --save-dtype int8, as the MineCLIP-mini rebuild does.)
    short = dataclasses.replace(
        cfg, out=tmp_path / "short", time_limit_min=1e-9, ckpt_every=100, save_dtype="int8"
    )
    stopped, _ = tr.train(short)
    assert "time limit" in capsys.readouterr().out
    assert [p.name for p in (short.out / "checkpoints").iterdir() if p.name.isdigit()] == ["1"]
    assert json.loads((short.out / "model" / "config.json").read_text())["storage"]["int8"] == [
        ["text_encoder", "token_embedding", "embedding"]
    ]
    emb = mcj.load_checkpoint(short.out / "model").params["text_encoder"]["token_embedding"]
    want = stopped.params["text_encoder"]["token_embedding"]["embedding"]
    np.testing.assert_allclose(emb["embedding"], want, atol=np.abs(want).max() / 254 * 1.001)


def test_retrieval_with_equivalent_captions_vs_loop():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 5, size=30)
    v = rng.normal(size=(30, 6)) + 2 * np.eye(6)[labels]
    t = rng.normal(size=(30, 6)) + 2 * np.eye(6)[labels]
    got = tr.retrieval_metrics(v, t, labels=labels)
    vn = v / np.linalg.norm(v, axis=1, keepdims=True)
    tn = t / np.linalg.norm(t, axis=1, keepdims=True)
    sim = vn @ tn.T
    for k in (1, 5):
        # Loop: the first-ranked candidate with the query's label must be within the top k.
        t2v = np.mean([labels[np.argsort(-sim[:, i])][:k].tolist().count(labels[i]) > 0
                       for i in range(30)])  # fmt: skip
        v2t = np.mean([labels[np.argsort(-sim[i, :])][:k].tolist().count(labels[i]) > 0
                       for i in range(30)])  # fmt: skip
        assert got[f"t2v_R@{k}"] == pytest.approx(t2v)
        assert got[f"v2t_R@{k}"] == pytest.approx(v2t)
    assert got["num_labels"] == len(set(labels.tolist()))
    # With all-distinct labels it is the pairwise metric.
    assert tr.retrieval_metrics(v, t, labels=np.arange(30)) == {
        **tr.retrieval_metrics(v, t),
        "num_labels": 30,
    }
    with pytest.raises(ValueError, match="labels must be"):
        tr.retrieval_metrics(v, t, labels=labels[:5])


def _array_clips(root, n=6, shape=(16, 16, 24, 3)):
    root.mkdir()
    meta = {"format": tr.ARRAY_FORMAT, "frame_shape": list(shape), "clips": {}}
    rng = np.random.default_rng(0)
    for split in ("train", "test"):
        np.save(root / f"{split}_frames.npy", rng.integers(0, 255, (n, *shape), dtype=np.uint8))
        texts = [f"clip {i} of {split}" for i in range(n)]
        np.save(root / f"{split}_tokens.npy", mcj.tokenize(texts))
        with open(root / f"{split}_clips.jsonl", "w") as f:
            for i, text in enumerate(texts):
                f.write(json.dumps({"text": text, "label": f"l{i % 2}"}) + "\n")
        meta["clips"][split] = n
    (root / "clips.json").write_text(json.dumps(meta))
    return root


def test_array_clip_directory_trains_at_the_model_size(tmp_path):
    root = _array_clips(tmp_path / "clips")
    src = tr.open_split(root, "train", (16, 24))
    batch = tr.load_examples(src, [4, 1, 4])
    full = np.load(root / "train_frames.npy")
    np.testing.assert_array_equal(batch["frames"], full[[4, 1, 4]])
    assert batch["text"] == ["clip 4 of train", "clip 1 of train", "clip 4 of train"]
    assert src.labels == ["l0", "l1"] * 3
    with pytest.raises(ValueError, match=r"holds frames \[16, 16, 24, 3\] but the model takes"):
        tr.open_split(root, "train", (160, 256))
    with pytest.raises(ValueError, match="no 'valid' split"):
        tr.open_split(root, "valid", (16, 24))
    # The avg aggregator trains on a frame subset; the attn one refuses it.
    cfg = tr.TrainConfig(data=root, out=tmp_path / "run", config="tiny", pool="attn", steps=1,
                         batch_size=4, train_frames=8, progress=False)  # fmt: skip
    with pytest.raises(ValueError, match="needs the avg aggregator"):
        tr.train(cfg)


def test_train_frames_subset_is_ordered_and_shared():
    # The step encodes frames[:, keep] with `keep` sorted: check through a model whose
    # video embedding is the mean of per-frame features (avg pool).
    module = mcj.MineCLIP(mcj.MineCLIPConfig.tiny(pool="avg", image_size=(16, 16)))
    seen = {}

    class Spy:
        def apply(self, variables, *args, method=None):
            if method == "encode_video":
                seen["frames"] = args[0]
            return module.apply(variables, *args, method=method)

    params = mcj.init_params(module.config, jax.random.key(0))
    opt = tr.make_optimizer(tr.TrainConfig(data=".", out=".", steps=2), params, module.config,
                            False)  # fmt: skip
    step = tr.make_train_step(Spy(), opt, 1.0, seed=0, train_frames=5)
    frames = np.broadcast_to(np.arange(16, dtype=np.uint8)[None, :, None, None, None],
                             (2, 16, 16, 16, 3))  # fmt: skip
    state = tr.TrainState(step=jnp.int32(0), params=params, opt_state=opt.init(params))
    step(state, jnp.asarray(frames), jnp.asarray(mcj.tokenize(["a", "b"])))
    kept = np.asarray(seen["frames"])[:, :, 0, 0, 0]
    assert kept.shape == (2, 5) and np.all(np.diff(kept[0]) > 0)
    np.testing.assert_array_equal(kept[0], kept[1])

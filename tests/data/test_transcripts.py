import json

import pytest

from data.transcripts import (
    TranscriptError,
    find_transcript,
    load_transcript,
    parse_json_transcript,
    parse_webvtt,
)

YOUTUBE_AUTO_VTT = """WEBVTT
Kind: captions
Language: en

00:00:01.000 --> 00:00:03.000 align:start position:0%
so<00:00:01.500><c> I</c><00:00:02.000><c> found</c><00:00:02.500><c> diamonds</c>

00:00:03.000 --> 00:00:03.010 align:start position:0%
so I found diamonds

00:00:03.010 --> 00:00:05.000 align:start position:0%
so I found diamonds
with<00:00:04.000><c> my</c><00:00:04.500><c> pickaxe</c>
"""


def test_youtube_auto_captions_keep_word_times_and_drop_rolling_repeats():
    segments = parse_webvtt(YOUTUBE_AUTO_VTT)
    words = [w for s in segments for w in s.words]
    assert [w.text for w in words] == ["so", "I", "found", "diamonds", "with", "my", "pickaxe"]
    assert [w.start_s for w in words] == [1.0, 1.5, 2.0, 2.5, 3.01, 4.0, 4.5]
    assert words[3].end_s == pytest.approx(3.0)


def test_plain_vtt_spreads_words_over_the_cue_and_strips_tags():
    vtt = "WEBVTT\n\nNOTE a comment\nspanning lines\n\n1\n00:01:00.000 --> 00:01:04.000\n<v Steve>hi <b>there</b> cow &amp; pig\n"
    (segment,) = parse_webvtt(vtt)
    assert segment.text == "hi there cow & pig"
    assert segment.words[0].start_s == 60.0 and segment.words[-1].end_s == pytest.approx(64.0)
    starts = [w.start_s for w in segment.words]
    assert starts == sorted(starts) and len(set(starts)) == 5


def test_not_vtt_is_a_clear_error():
    with pytest.raises(TranscriptError, match="WEBVTT"):
        parse_webvtt("00:00:01.000 --> 00:00:02.000\nhello\n")


def test_json_shapes():
    whisper = {
        "segments": [
            {
                "start": 0,
                "end": 2,
                "text": "a cow",
                "words": [
                    {"word": " a", "start": 0.0, "end": 0.5},
                    {"word": " cow", "start": 0.5, "end": 2.0},
                ],
            }
        ]
    }
    assert [w.text for w in parse_json_transcript(whisper)[0].words] == ["a", "cow"]
    api = [
        {"text": "mine iron ore", "start": 3.0, "duration": 1.5},
        {"text": "", "start": 1, "duration": 1},
    ]
    (segment,) = parse_json_transcript(api)
    assert (segment.start_s, segment.end_s, segment.text) == (3.0, 4.5, "mine iron ore")
    words_only = {"words": [{"text": "pig", "start": 7, "end": 8}]}
    assert parse_json_transcript(words_only)[0].start_s == 7
    with pytest.raises(TranscriptError, match="'end' or 'duration'"):
        parse_json_transcript([{"text": "x", "start": 1}])
    with pytest.raises(TranscriptError, match="expected a list"):
        parse_json_transcript({"foo": 1})


def test_load_and_find(tmp_path):
    (tmp_path / "v1.en.vtt").write_text(YOUTUBE_AUTO_VTT)
    (tmp_path / "v2.json").write_text(json.dumps([{"text": "hi", "start": 0, "end": 1}]))
    (tmp_path / "v3.json").write_text("{not json")
    assert len(load_transcript(find_transcript(tmp_path, "v1"))) == 2  # repeat cue dropped
    assert load_transcript(find_transcript(tmp_path, "v2"))[0].text == "hi"
    with pytest.raises(TranscriptError, match="invalid JSON"):
        load_transcript(tmp_path / "v3.json")
    assert find_transcript(tmp_path, "v4") is None

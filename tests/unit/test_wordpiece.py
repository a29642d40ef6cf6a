# ruff: noqa: RUF001  (the hard strings are ambiguous characters on purpose)
"""The pure-Python BERT tokenizer (search/wordpiece.py) gives the ``tokenizers`` library's
ids for the model the light query worker runs, and refuses what it does not copy."""

from __future__ import annotations

import json
import random
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import CORPUS, ROOT, corpus_files

tokenizers = pytest.importorskip("tokenizers", reason="needs tokenizers (the semantic extra)")

from toolscript.search import packed, wordpiece  # noqa: E402
from toolscript.search.wordpiece import WordPiece  # noqa: E402


def model_tokenizer() -> Path:
    from toolscript.search.semantic import model_directory

    directory = model_directory(None)
    if directory is None or not (directory / "tokenizer.json").is_file():
        pytest.skip("the packaged model (semantic extra) is not installed")
    return directory / "tokenizer.json"


def library(path_or_text: Path | str, max_length: int | None) -> Any:
    text = path_or_text.read_text() if isinstance(path_or_text, Path) else path_or_text
    tokenizer = tokenizers.Tokenizer.from_str(text)
    tokenizer.no_padding()
    if max_length is None:
        tokenizer.no_truncation()
    else:
        tokenizer.enable_truncation(max_length)
    return tokenizer


def assert_same_ids(settings: Path | str, texts: list[str], max_length: int | None) -> None:
    source = settings.read_text() if isinstance(settings, Path) else settings
    ours = WordPiece(json.loads(source))
    theirs = library(source, max_length)
    expected = theirs.encode_batch(texts)
    wrong = []
    for text, encoding in zip(texts, expected, strict=True):
        if not ours.handles(text):
            continue
        ids = ours.encode(text, max_length)
        if ids != encoding.ids or len(ids) != sum(encoding.attention_mask):
            wrong.append((text, ids, encoding.ids))
    assert not wrong, wrong[:3]


def query_sets() -> list[str]:
    texts = []
    for name in ("queries.txt", "queries_heldout.txt"):
        for line in (ROOT / "bench" / "search" / name).read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                texts.append(line.split(" | ")[0])
    sample = CORPUS / "queries_sample.json"
    if sample.is_file():
        for key, rows in json.loads(sample.read_text()).items():
            if not key.startswith("_"):
                texts.extend(str(row["query"]) for row in rows)
    return texts


def corpus_texts() -> list[str]:
    texts = []
    for path in corpus_files():
        for tool in json.loads(path.read_text()):
            if isinstance(tool, dict):
                texts.append(str(tool.get("name", "")))
                texts.append(str(tool.get("description") or ""))
                texts.append(json.dumps(tool.get("inputSchema") or {}, ensure_ascii=False))
    return texts


def hard_strings() -> list[str]:
    made = [
        "",
        " ",
        "\t\n\r",
        "Café Crème brûlée naïve façade Ångström",
        "e\u0301 a\u0308\u0301 o\u0323\u0302 \u0301alone x\u20dd",  # combining marks
        "東京の天気は？ 北京 ㄅ 한국어 𠀀𠀁 𪜀 丽",  # CJK, extension B, compatibility
        "ship it 🚀🔥👍🏽 👨‍👩‍👧 🇯🇵 ☃ ✓",  # emoji, ZWJ sequences, flags
        "nul\x00bell\x07esc\x1b del\x7f nel\x85 \x9f",  # control characters
        "zero\u200bwidth\u200cjoin\u200dmark\u2060\ufeffbom \u00ad soft",
        "line\u2028separator\u2029paragraph\u3000ideographic\u00a0nbsp\u202f",
        "tabs\tand\nnewlines\r\nand\x0bvertical\x0cfeed",
        "!!!??? ... ---- ((([[[{{{}}}]]]))) $$$ @@@ ### ``` ~~~ ^^^ |||",
        "«quotes» „German“ ‘single’ — em – en … ¡Hola! ¿Qué? 《书》",
        "a" * 99,
        "a" * 100,
        "a" * 101,
        "supercalifragilisticexpialidocious" * 4,
        "é" * 101 + " ok",
        "3.14159 1,000,000 -42 +7 1e-9 0x1F 2024-01-31T12:00:00Z 10%",
        "MiXeD CaSe camelCaseName snake_case_name SCREAMING_CASE kebab-case",
        "İstanbul ISTANBUL ıi İi DİYARBAKIR",  # Turkish dotted and dotless I
        "Straße STRASSE ß ẞ Maß",
        "ΟΔΟΣ Σίσυφος ὀδυσσεύς ΣΑΣ σς ς",  # Greek final sigma
        "ﬁ ﬂ ﬀ ℌ ℍ Ⅻ ① ㎏ ＦＵＬＬＷＩＤＴＨ ｶﾀｶﾅ",
        "[CLS] [SEP] [MASK][PAD][UNK] [cls] [[SEP]] x[SEP]y",
        "\ufffd replacement \ue000 private \U000f0000 plane 15 \U000e0041 tag",
        "\u0378 unassigned \U0001fffe \U0010ffff",
        "Ǆ ǅ ǆ ǈ ǋ ﬀ ŉ ΐ ǰ",  # title case and expanding lowercase
        "\u0130\u0307 I\u0307 i\u0307",
        "ab\u0300\u0316cd \u0f71\u0f72\u0f74 \u093f\u0947 ম\u09bcি",  # reordered marks
        " ".join(["word"] * 300),  # longer than any max_length
        "search:   github   (pull-requests)   [open]   {repo: 'x/y'}   <tag/>",
    ]
    rng = random.Random(45)
    alphabet = (
        "aZ09 \t\n.,;:!?'\"-_/\\()[]{}<>@#$%^&*+=|~`"
        "éÉèñÑüÜöÖçßİıΣσςЖжاب東京한😀\u0301\u0308\u200b\u200d\u2028\x00\x7f\ufffd"
    )
    for _ in range(300):
        made.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 80))))
    return made


@pytest.mark.parametrize("max_length", [128, 256, 8])
def test_ids_equal_the_librarys_on_every_query_and_tool(max_length: int) -> None:
    path = model_tokenizer()
    texts = query_sets() + corpus_texts() + hard_strings()
    assert WordPiece.of(path) is not None
    assert len(texts) > 358
    assert_same_ids(path, texts, max_length)
    assert_same_ids(path, hard_strings(), None)


def test_every_character_it_handles_gives_the_librarys_ids() -> None:
    """Each character alone and between letters (its normalization, whether it splits
    words): the tables DOUBTFUL leaves to the library are the only ones that differ."""
    path = model_tokenizer()
    # (planes 4 to 13 are unassigned, 15 and 16 private use: their ends stand for them)
    ranges = [(0, 0x30000), (0xE0000, 0xE1000), (0xF0000, 0xF0100), (0x10FF00, 0x110000)]
    points = [p for low, high in ranges for p in range(low, high) if not 0xD800 <= p <= 0xDFFF]
    if unicodedata.unidata_version not in wordpiece.UNICODE:
        points = list(range(128))
    chars = [chr(p) for p in points]
    handled = WordPiece(json.loads(path.read_text()))
    chars = [c for c in chars if handled.handles(c)]
    texts = [" ".join(f"a{c}a" for c in chars[at : at + 400]) for at in range(0, len(chars), 400)]
    assert_same_ids(path, texts, None)


def test_texts_it_does_not_handle_go_to_the_library() -> None:
    path = model_tokenizer()
    file_tokenizer = packed.FileTokenizer(path)
    doubtful = "ready\u2e43 set \u166d go \u0898"  # punctuation, a symbol, a mark, all new
    assert file_tokenizer._pure is not None and not file_tokenizer._pure.handles(doubtful)
    texts = ["list my pull requests", doubtful]
    got = file_tokenizer(texts, truncation=True, max_length=128)
    expected = library(path, 128).encode_batch(texts)
    assert got["input_ids"] == [e.ids for e in expected]
    assert got["token_type_ids"] == [e.type_ids for e in expected]


def variant(path: Path, change: Any) -> str:
    settings = json.loads(path.read_text())
    change(settings)
    return json.dumps(settings)


@pytest.mark.parametrize(
    "flags",
    [
        {"strip_accents": False},
        {"strip_accents": True, "lowercase": False},
        {"lowercase": False},
        {"clean_text": False},
        {"handle_chinese_chars": False},
    ],
)
def test_bert_normalizer_flags_give_the_librarys_ids(flags: dict[str, Any]) -> None:
    source = variant(model_tokenizer(), lambda s: s["normalizer"].update(flags))
    assert_same_ids(source, hard_strings(), 128)


def test_bert_processing_gives_the_librarys_ids() -> None:
    def bert_processing(settings: dict[str, Any]) -> None:
        settings["post_processor"] = {
            "type": "BertProcessing",
            "sep": ["[SEP]", 102],
            "cls": ["[CLS]", 101],
        }

    source = variant(model_tokenizer(), bert_processing)
    assert_same_ids(source, hard_strings(), 64)


@pytest.mark.parametrize(
    "change",
    [
        lambda s: s.update(normalizer={"type": "Lowercase"}),
        lambda s: s["normalizer"].update(extra=True),
        lambda s: s.update(pre_tokenizer={"type": "Whitespace"}),
        lambda s: s.update(model={**s["model"], "type": "WordLevel"}),
        lambda s: s.update(
            post_processor={
                "type": "RobertaProcessing",
                "sep": ["[SEP]", 102],
                "cls": ["[CLS]", 101],
                "trim_offsets": True,
                "add_prefix_space": False,
            }
        ),
        lambda s: s["post_processor"]["single"].pop(),
        lambda s: s["added_tokens"][0].update(normalized=True),
        lambda s: s["added_tokens"][1].update(lstrip=True),
        lambda s: s["model"].update(unk_token="[NOWHERE]"),
    ],
)
def test_another_kind_of_tokenizer_runs_through_the_library(tmp_path: Path, change: Any) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text(variant(model_tokenizer(), change))
    assert WordPiece.of(path) is None
    file_tokenizer = packed.FileTokenizer(path)
    assert file_tokenizer._pure is None and file_tokenizer._library is not None


def test_the_light_worker_loads_the_library_only_for_a_text_that_needs_it() -> None:
    file_tokenizer = packed.FileTokenizer(model_tokenizer())
    file_tokenizer(["what time is it in Tokyo", "Café ☕ 東京"], truncation=True, max_length=128)
    assert file_tokenizer._library is None

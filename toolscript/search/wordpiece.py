"""A BERT tokenizer in pure Python: the ids ``tokenizers`` gives for a BERT's tokenizer.json.

The light query process (process.py) tokenizes a few queries at a time; the ``tokenizers``
library and a tokenizer loaded from tokenizer.json hold about 15 MB of its memory, this
(the vocabulary as a dict) about 4 (bench/NOTES.md). ``WordPiece.of`` reads exactly
what a BERT's tokenizer.json says, and gives None for any other (a different normalizer,
pre-tokenizer, model, post-processor, or added tokens matched in other ways): those run
through ``tokenizers`` as before. Its steps are the library's (checked with 0.23):

- added tokens (``[CLS]``, ``[SEP]``... not normalized) are found in the raw text first,
  leftmost-longest, and give their own id;
- ``BertNormalizer``: clean_text drops NUL, U+FFFD and "other" characters (Cc, Cf, Co;
  not unassigned ones) but tab, newline and return, and makes whitespace a space; handle_chinese_chars
  spaces out CJK ideographs; strip_accents (NFD, then no Mn); lowercase, a character at a
  time (no final sigma: Rust's ``char::to_lowercase``);
- ``BertPreTokenizer``: words split at Unicode White_Space, each punctuation character
  (ASCII punctuation, or a P* category) a word of its own;
- ``WordPiece``: greedy longest match from the left, later pieces with the prefix; a
  word with no match, or longer than ``max_input_chars_per_word`` characters, is unk;
- the template ``[CLS] A [SEP]``, A truncated to leave room for both.

tests/unit/test_wordpiece.py compares its ids with the library's on every query set, the
tool corpus, every character and strings made to be hard.
"""

from __future__ import annotations

import bisect
import json
import unicodedata
from pathlib import Path
from typing import Any

__all__ = ["WordPiece"]

# Unicode's White_Space property (Rust's char::is_whitespace).
WHITE_SPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
# The ideographs BertNormalizer spaces out (tokenizers' is_chinese_char).
CJK = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)
ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
OTHER = frozenset({"Cc", "Cf", "Co", "Cs"})  # (unassigned characters stay, as there)

# The library's character tables are older than Python's: checked character by character
# against Python's Unicode 14.0, 15.0 and 15.1 (Python 3.11 to 3.13; the running one in
# tests/unit/test_wordpiece.py), these characters (new punctuation and marks since, one
# moved to symbols: 624) are not treated alike. A text holding one, or any character but
# ASCII under another Unicode version, is left to the library.
UNICODE = frozenset({"14.0.0", "15.0.0", "15.1.0"})
# fmt: off
DOUBTFUL = (  # first, last, first, last...
    0x061D, 0x061D, 0x07FD, 0x07FD, 0x0890, 0x0891, 0x0898, 0x089F, 0x08CA, 0x08E2, 0x09FD,
    0x09FE, 0x0A76, 0x0A76, 0x0AFA, 0x0AFF, 0x0B55, 0x0B55, 0x0C04, 0x0C04, 0x0C3C, 0x0C3C,
    0x0C77, 0x0C77, 0x0C84, 0x0C84, 0x0D00, 0x0D00, 0x0D3B, 0x0D3C, 0x0D81, 0x0D81, 0x0EBA,
    0x0EBA, 0x0ECE, 0x0ECE, 0x166D, 0x166D, 0x1734, 0x1734, 0x180F, 0x180F, 0x1885, 0x1886,
    0x1ABF, 0x1ACE, 0x1B7D, 0x1B7E, 0x1C89, 0x1C89, 0x1DF6, 0x1DFB, 0x2E43, 0x2E4F, 0x2E52,
    0x2E5D, 0xA7CB, 0xA7CC, 0xA7CE, 0xA7CE, 0xA7D2, 0xA7D2, 0xA7D4, 0xA7D4, 0xA7DA, 0xA7DA,
    0xA7DC, 0xA7DC, 0xA82C, 0xA82C, 0xA8C5, 0xA8C5, 0xA8FF, 0xA8FF, 0xA9BD, 0xA9BD, 0x10D24,
    0x10D27, 0x10D50, 0x10D65, 0x10EAB, 0x10EAD, 0x10EFD, 0x10EFF, 0x10F46, 0x10F50, 0x10F55,
    0x10F59, 0x10F82, 0x10F89, 0x11070, 0x11070, 0x11073, 0x11074, 0x110C2, 0x110C2, 0x110CD,
    0x110CD, 0x111C9, 0x111C9, 0x111CF, 0x111CF, 0x1123E, 0x1123E, 0x11241, 0x11241, 0x1133B,
    0x1133B, 0x11438, 0x1143F, 0x11442, 0x11444, 0x11446, 0x11446, 0x1144B, 0x1144F, 0x1145A,
    0x1145B, 0x1145D, 0x1145E, 0x11660, 0x1166C, 0x116B9, 0x116B9, 0x1182F, 0x11837, 0x11839,
    0x1183B, 0x11938, 0x11938, 0x1193B, 0x1193C, 0x1193E, 0x1193E, 0x11943, 0x11946, 0x119D4,
    0x119D7, 0x119DA, 0x119DB, 0x119E0, 0x119E0, 0x119E2, 0x119E2, 0x11A01, 0x11A0A, 0x11A33,
    0x11A38, 0x11A3B, 0x11A47, 0x11A51, 0x11A56, 0x11A59, 0x11A5B, 0x11A8A, 0x11A96, 0x11A98,
    0x11A9C, 0x11A9E, 0x11AA2, 0x11B00, 0x11B09, 0x11C30, 0x11C36, 0x11C38, 0x11C3D, 0x11C3F,
    0x11C3F, 0x11C41, 0x11C45, 0x11C70, 0x11C71, 0x11C92, 0x11CA7, 0x11CAA, 0x11CB0, 0x11CB2,
    0x11CB3, 0x11CB5, 0x11CB6, 0x11D31, 0x11D36, 0x11D3A, 0x11D3A, 0x11D3C, 0x11D3D, 0x11D3F,
    0x11D45, 0x11D47, 0x11D47, 0x11D90, 0x11D91, 0x11D95, 0x11D95, 0x11D97, 0x11D97, 0x11EF3,
    0x11EF4, 0x11EF7, 0x11EF8, 0x11F00, 0x11F01, 0x11F36, 0x11F3A, 0x11F40, 0x11F40, 0x11F42,
    0x11F4F, 0x11FFF, 0x11FFF, 0x12FF1, 0x12FF2, 0x13430, 0x13440, 0x13447, 0x13455, 0x16E97,
    0x16E9A, 0x16EA0, 0x16EB8, 0x16F4F, 0x16F4F, 0x16FE2, 0x16FE2, 0x16FE4, 0x16FE4, 0x1CF00,
    0x1CF2D, 0x1CF30, 0x1CF46, 0x1E000, 0x1E006, 0x1E008, 0x1E018, 0x1E01B, 0x1E021, 0x1E023,
    0x1E024, 0x1E026, 0x1E02A, 0x1E08F, 0x1E08F, 0x1E130, 0x1E136, 0x1E2AE, 0x1E2AE, 0x1E2EC,
    0x1E2EF, 0x1E4EC, 0x1E4EF, 0x1E944, 0x1E94A, 0x1E95E, 0x1E95F,
)
# fmt: on


class WordPiece:
    """``tokenizers.Tokenizer.from_file`` of a BERT's tokenizer.json, called as ``pack``
    calls transformers' tokenizer: the same ids, no padding."""

    def __init__(self, settings: dict[str, Any]) -> None:
        normalizer = settings["normalizer"]
        model = settings["model"]
        self._clean = bool(normalizer["clean_text"])
        self._chinese = bool(normalizer["handle_chinese_chars"])
        self._lowercase = bool(normalizer["lowercase"])
        strip = normalizer.get("strip_accents")
        self._strip = self._lowercase if strip is None else bool(strip)
        self._vocab: dict[str, int] = model["vocab"]
        self._unk = self._vocab[model["unk_token"]]
        self._prefix = str(model["continuing_subword_prefix"])
        self._longest = int(model["max_input_chars_per_word"])
        self._added = {t["content"]: int(t["id"]) for t in settings.get("added_tokens") or ()}
        self._first, self._last = _template(settings["post_processor"])

    @classmethod
    def of(cls, path: Path) -> WordPiece | None:
        """The tokenizer of ``path`` (a tokenizer.json), or None where it is not one this
        module gives the library's ids for."""
        try:
            settings = json.loads(path.read_text(encoding="utf-8"))
            return cls(settings) if _supported(settings) else None
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def handles(self, text: str) -> bool:
        """Whether this gives the library's ids for ``text`` (else the library must)."""
        if text.isascii():
            return True
        if unicodedata.unidata_version not in UNICODE:
            return False
        return not any(_doubtful(ord(c)) for c in text if not c.isascii())

    def __call__(
        self, texts: list[str], *, truncation: bool, max_length: int
    ) -> dict[str, list[list[int]]]:
        ids = [self.encode(text, max_length if truncation else None) for text in texts]
        return {"input_ids": ids, "token_type_ids": [[0] * len(row) for row in ids]}

    def encode(self, text: str, max_length: int | None = None) -> list[int]:
        """The ids of ``text``: [CLS], its tokens (cut to leave ``max_length`` in all), [SEP]."""
        tokens: list[int] = []
        for piece, added in self._split_added(text):
            if added is not None:
                tokens.append(added)
                continue
            for word in self._words(self._normalize(piece)):
                tokens.extend(self._pieces(word))
        if max_length is not None:
            if max_length < 2:
                raise ValueError(f"max_length {max_length} leaves no room for [CLS] and [SEP]")
            del tokens[max_length - 2 :]
        return [self._first, *tokens, self._last]

    def _split_added(self, text: str) -> list[tuple[str, int | None]]:
        """``text`` in pieces: the added tokens in it (leftmost, longest first) with their
        ids, the text between with None."""
        if not any(added in text for added in self._added):
            return [(text, None)]
        pieces: list[tuple[str, int | None]] = []
        start = at = 0
        while at < len(text):
            found = max((a for a in self._added if text.startswith(a, at)), key=len, default=None)
            if found is None:
                at += 1
                continue
            if start < at:
                pieces.append((text[start:at], None))
            pieces.append((found, self._added[found]))
            at = start = at + len(found)
        if start < len(text):
            pieces.append((text[start:], None))
        return pieces

    def _normalize(self, text: str) -> str:
        if self._clean:
            text = "".join(
                " " if c in WHITE_SPACE else c
                for c in text
                if c in "\t\n\r" or not (c == "\ufffd" or unicodedata.category(c) in OTHER)
            )
        if self._chinese and not text.isascii():
            text = "".join(f" {c} " if _is_cjk(c) else c for c in text)
        if self._strip and not text.isascii():
            text = "".join(
                c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn"
            )
        if self._lowercase:
            text = text.lower() if text.isascii() else "".join(c.lower() for c in text)
        return text

    @staticmethod
    def _words(text: str) -> list[str]:
        """BertPreTokenizer: split at white space, each punctuation character alone."""
        words: list[str] = []
        word: list[str] = []
        for c in text:
            if c in WHITE_SPACE:
                if word:
                    words.append("".join(word))
                    word = []
            elif c in ASCII_PUNCTUATION or unicodedata.category(c).startswith("P"):
                if word:
                    words.append("".join(word))
                    word = []
                words.append(c)
            else:
                word.append(c)
        if word:
            words.append("".join(word))
        return words

    def _pieces(self, word: str) -> list[int]:
        """WordPiece: the longest known piece from the left, each after the first with the
        prefix; unk for a word too long or with a part no piece matches."""
        if len(word) > self._longest:
            return [self._unk]
        vocab = self._vocab
        ids: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else self._prefix + word[start:end]
                found = vocab.get(piece)
                if found is not None:
                    ids.append(found)
                    break
                end -= 1
            else:
                return [self._unk]
            start = end
        return ids


def _doubtful(point: int) -> bool:
    at = bisect.bisect_left(DOUBTFUL, point)
    return (at < len(DOUBTFUL) and DOUBTFUL[at] == point) or at % 2 == 1


def _is_cjk(c: str) -> bool:
    point = ord(c)
    return any(low <= point <= high for low, high in CJK)


def _template(processor: dict[str, Any]) -> tuple[int, int]:
    """The ids around a single sequence: [CLS] A [SEP], of either processor's form."""
    if processor["type"] == "BertProcessing":
        return int(processor["cls"][1]), int(processor["sep"][1])
    single = processor["single"]
    specials = processor["special_tokens"]
    (first,) = specials[single[0]["SpecialToken"]["id"]]["ids"]
    (last,) = specials[single[2]["SpecialToken"]["id"]]["ids"]
    return int(first), int(last)


def _supported(settings: dict[str, Any]) -> bool:
    """Whether ``settings`` (a tokenizer.json) is a BERT tokenizer of exactly the steps
    ``WordPiece`` takes."""
    normalizer = settings.get("normalizer") or {}
    model = settings.get("model") or {}
    processor = settings.get("post_processor") or {}
    return (
        normalizer.get("type") == "BertNormalizer"
        and set(normalizer)
        == {"type", "clean_text", "handle_chinese_chars", "strip_accents", "lowercase"}
        and all(
            isinstance(normalizer[k], bool)
            for k in ("clean_text", "handle_chinese_chars", "lowercase")
        )
        and normalizer["strip_accents"] in (None, True, False)
        and (settings.get("pre_tokenizer") or {}).get("type") == "BertPreTokenizer"
        and model.get("type") == "WordPiece"
        and isinstance(model.get("vocab"), dict)
        and model.get("unk_token") in model["vocab"]
        and isinstance(model.get("continuing_subword_prefix"), str)
        and isinstance(model.get("max_input_chars_per_word"), int)
        and _template_supported(processor)
        and all(_added_supported(token) for token in settings.get("added_tokens") or ())
    )


def _added_supported(token: dict[str, Any]) -> bool:
    """An added token matched as the raw text holds it (not normalized, not stripped)."""
    return (
        isinstance(token.get("content"), str)
        and token["content"] != ""
        and isinstance(token.get("id"), int)
        and not token.get("normalized")
        and not token.get("single_word")
        and not token.get("lstrip")
        and not token.get("rstrip")
    )


def _template_supported(processor: dict[str, Any]) -> bool:
    if processor.get("type") == "BertProcessing":
        return (
            set(processor) == {"type", "sep", "cls"}
            and isinstance(processor["cls"][1], int)
            and isinstance(processor["sep"][1], int)
        )
    if processor.get("type") != "TemplateProcessing":
        return False
    single = processor.get("single") or []
    specials = processor.get("special_tokens") or {}
    shape = [next(iter(part)) for part in single]
    if shape != ["SpecialToken", "Sequence", "SpecialToken"]:
        return False
    named = [single[0]["SpecialToken"], single[2]["SpecialToken"]]
    return (
        single[1]["Sequence"] == {"id": "A", "type_id": 0}
        and all(part.get("type_id") == 0 for part in named)
        and all(len((specials.get(part["id"]) or {}).get("ids") or ()) == 1 for part in named)
    )

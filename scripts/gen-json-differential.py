#!/usr/bin/env python3
"""Records CPython's exact answer for adversarial JSON inputs: our parity regression corpus.

Usage (development only, from the repository root, with CPython 3.11):

    python3 scripts/gen-json-differential.py

Writes `corpus/json/differential.json`, which `test/json-differential.test.ts` replays against
our parser (`parseJson`), canonical encoder (`canonicalBytes`/`canonicalText`) and `pyRepr`.
The test suite never runs Python; rerun this script only to add cases, and commit the
regenerated corpus together with the script change.

Each input goes through the reference CLI's pipeline (verifier.md §1.1 step 3, §1.2, §2):
decode the bytes as strict UTF-8 (`bytes.decode("utf-8")`), then `json.loads` with an
`object_pairs_hook` that rejects the first repeated member name; on success, `canonical_bytes`
and `repr` of the value. (No universal-newline translation: that is a separate option of our
parser, not exercised here.) The corpus is a JSON array of

    {"name", "input_b64", "outcome"[, "known_difference", "ours"]}

where `outcome` is what Python did, one of

    {"ok": false, "error_type": type(exc).__name__, "message": str(exc)}
    {"ok": true, "repr": repr(value), "canonical_b64": base64 of the canonical bytes}
    {"ok": true, "repr": repr(value), "canonical_error": str(exc), "canonical_error_type": ...}

`known_difference` marks the few cases where we deliberately do not answer as this interpreter
does, and says why; `ours` is then the behaviour the test asserts instead (same shape; for an
error only `error_type` is given, because our wording is our own there).
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from collections.abc import Callable
from typing import Any

if sys.version_info[:2] != (3, 11):
    # Error wording and the Unicode tables behind repr() change between minor versions; the
    # corpus pins the 3.11 behaviour the reference is documented against.
    sys.exit(f"needs CPython 3.11, this is {sys.version.split()[0]}")

OUTPUT = Path(__file__).resolve().parent.parent / "corpus" / "json" / "differential.json"

# Our parser's nesting cap (src/verifier/json/parse.ts PARSER_MAX_DEPTH).
OUR_MAX_DEPTH = 1000

FLOAT_ERROR = "floats are not allowed in continuity receipts (v0)"


def reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """The reference's object_pairs_hook: the first repeated name (after unescaping) fails."""
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise ValueError(f"duplicate JSON object member: {key!r}")
        obj[key] = value
    return obj


def contains_float(value: Any) -> bool:
    # Iterative on purpose: documents deeper than the verifier's 64-level limit never reach
    # canonicalisation in the reference, so the walk's own recursion limit is not parity-relevant
    # and must not leak into the deep-nesting cases below.
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def canonical_bytes(value: Any) -> bytes:
    """The reference's canon.canonical_bytes (verifier.md §2)."""
    if contains_float(value):
        raise ValueError(FLOAT_ERROR)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True).encode(
        "utf-8"
    )


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def python_outcome(data: bytes) -> dict[str, Any]:
    try:
        text = data.decode("utf-8")
        value = json.loads(text, object_pairs_hook=reject_duplicates)
    except Exception as exc:  # noqa: BLE001 - the exception type is part of the record
        return {"ok": False, "error_type": type(exc).__name__, "message": str(exc)}
    result: dict[str, Any] = {"ok": True}
    # Only parsing runs under the default recursion limit. The reference never canonicalises or
    # repr()s anything nested deeper than 64 levels (verify_bundle rejects it first), so running
    # out of stack in json.dumps or repr is not behaviour to copy: those get room to finish.
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(max(previous, 50_000))
    try:
        try:
            result["canonical_b64"] = b64(canonical_bytes(value))
        except ValueError as exc:
            result["canonical_error"] = str(exc)
            result["canonical_error_type"] = type(exc).__name__
        result["repr"] = repr(value)
    finally:
        sys.setrecursionlimit(previous)
    return result


def outcome_without_recursion_limit(data: bytes) -> dict[str, Any]:
    """What this interpreter answers when its stack is not the limiting factor."""
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(50_000)
    try:
        return python_outcome(data)
    finally:
        sys.setrecursionlimit(previous)


cases: list[dict[str, Any]] = []


def add(name: str, data: str | bytes, **extra: Any) -> dict[str, Any]:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if any(case["name"] == name for case in cases):
        raise SystemExit(f"duplicate case name: {name}")
    case = {"name": name, "input_b64": b64(raw), "outcome": python_outcome(raw), **extra}
    cases.append(case)
    return case


# ---- syntax errors ------------------------------------------------------------------------

for name, text in [
    ("empty input", ""),
    ("whitespace only", " \t\n\r "),
    ("lone open bracket", "["),
    ("lone open brace", "{"),
    ("lone close bracket", "]"),
    ("lone close brace", "}"),
    ("lone colon", ":"),
    ("lone comma", ","),
    ("object: key without colon at end", '{"a"'),
    ("object: colon then end", '{"a":'),
    ("object: comma then end", '{"a":1,'),
    ("object: value then end", '{"a":1'),
    ("object: comma only", "{,}"),
    ("object: trailing comma", '{"a":1,}'),
    ("object: missing colon", '{"a" 1}'),
    ("object: missing comma", '{"a":1 "b":2}'),
    ("object: number as key", "{1:2}"),
    ("object: bare word key", "{a:1}"),
    ("object: single-quoted key", "{'a':1}"),
    ("object: whitespace before colon and comma", '{ "a" : 1 , "b" : 2 }'),
    ("array: trailing comma", "[1,]"),
    ("array: leading comma", "[,1]"),
    ("array: double comma", "[1,,2]"),
    ("array: missing comma", "[1 2]"),
    ("array: value then end", "[1"),
    ("array: comma then end", "[1,"),
    ("array: mismatched close", "[1}"),
    ("object: mismatched close", '{"a":1]'),
    ("number: leading zero", "01"),
    ("number: double zero", "00"),
    ("number: negative leading zero", "-01"),
    ("number: lone minus", "-"),
    ("number: minus letter", "-a"),
    ("number: minus space digit", "- 1"),
    ("number: trailing dot", "1."),
    ("number: trailing dot in array", "[1.]"),
    ("number: dot then exponent", "1.e5"),
    ("number: leading dot", ".5"),
    ("number: bare exponent", "1e"),
    ("number: bare exponent in array", "[1e]"),
    ("number: exponent sign only", "1e+"),
    ("number: exponent sign only in array", "[1e+]"),
    ("number: exponent minus only in array", "[1E-]"),
    ("number: fraction then bare exponent in array", "[1.5e]"),
    ("number: plus sign", "+1"),
    ("number: hex", "0x10"),
    ("number: underscore", "1_000"),
    ("number: two dots", "1.5.2"),
    ("number: zero then bare exponent", "0e"),
    ("number: Arabic-Indic digit", "\u0663"),
    ("number: fullwidth digit", "\uff11"),
    ("literal: tru", "tru"),
    ("literal: nul", "nul"),
    ("literal: fals", "fals"),
    ("literal: tru in array", "[tru]"),
    ("literal: True", "True"),
    ("literal: NULL", "NULL"),
    ("literal: nan lowercase", "nan"),
    ("literal: infinity lowercase", "infinity"),
    ("literal: NaNx", "NaNx"),
    ("literal: -NaN", "-NaN"),
    ("literal: Infinityx", "Infinityx"),
    ("literal: -Infinityx", "-Infinityx"),
    ("literal: -Inf", "-Inf"),
    ("literal: Infinit", "Infinit"),
    ("literal: NaN", "NaN"),
    ("literal: Infinity", "Infinity"),
    ("literal: -Infinity", "-Infinity"),
    ("literal: constants in array", "[NaN,Infinity,-Infinity]"),
    ("single-quoted string", "'a'"),
    ("line comment before value", "// c\n1"),
    ("block comment before value", "/* c */1"),
    ("line comment after value", "1 // c"),
    ("block comment after array", "[1]/**/"),
    ("trailing data: second number", "1 2"),
    ("trailing data: two objects", "{} {}"),
    ("trailing data: word after array", "[] x"),
    ("trailing data: two strings", '"a""b"'),
    ("trailing data: NUL after array", "[1]\x00"),
    ("whitespace: form feed is not whitespace", "\f1"),
    ("whitespace: vertical tab is not whitespace", "\v1"),
    ("whitespace: no-break space is not whitespace", "\u00a01"),
    ("whitespace: ideographic space after value", "1\u3000"),
    ("whitespace: line separator before value", "\u20281"),
    ("scalar: null", "null"),
    ("scalar: true", "true"),
    ("scalar: false", "false"),
    ("scalar: padded", " \t\r\n 7 \n"),
    ("scalar: empty string", '""'),
    ("empty containers", '[[],{},[{}],{"a":[]}]'),
]:
    add(name, text)

# ---- strings ------------------------------------------------------------------------------

for name, text in [
    ("string: unterminated", '"abc'),
    ("string: lone quote", '"'),
    ("string: unterminated in array", '["abc'),
    ("string: unterminated key", '{"abc'),
    ("string: unterminated after escaped quote", '"\\"'),
    ("string: backslash at end", '"abc\\'),
    ("string: \\u at end", '"\\u'),
    ("string: \\u1 at end", '"\\u1'),
    ("string: \\u123 at end", '"\\u123'),
    ("string: complete \\u1234 at end", '"\\u1234'),
    ("string: \\u12 then quote", '"\\u12"'),
    ("string: \\u123 then quote", '"\\u123"'),
    ("string: \\u12G4", '"\\u12G4"'),
    ("string: \\uGGGG", '"\\uGGGG"'),
    ("string: \\u with sign", '"\\u-123"'),
    ("string: \\u with space", '"\\u 123"'),
    ("string: \\x escape", '"\\x41"'),
    ("string: \\a escape", '"\\a"'),
    ("string: \\U escape", '"\\U0001F600"'),
    ("string: \\0 escape", '"\\0"'),
    ("string: escaped single quote", "\"\\'\""),
    ("string: backslash space", '"\\ "'),
    ("string: all simple escapes", '"\\"\\\\\\/\\b\\f\\n\\r\\t"'),
    ("string: uppercase hex escapes", '"\\u00E9\\uD83D\\uDE00"'),
    ("string: lone high surrogate", '"\\ud800"'),
    ("string: lone low surrogate", '"\\udc00"'),
    ("string: surrogate pair", '"\\ud800\\udc00"'),
    ("string: highest surrogate pair", '"\\udbff\\udfff"'),
    ("string: high surrogate then \\u0041", '"\\ud800\\u0041"'),
    ("string: low then high surrogate", '"\\udc00\\ud800"'),
    ("string: two high surrogates", '"\\ud800\\ud800"'),
    ("string: high surrogate then \\u12G4", '"\\ud800\\u12G4"'),
    ("string: high surrogate then \\uZZZZ", '"\\ud800\\uZZZZ"'),
    ("string: high surrogate then short \\u at end", '"\\ud800\\ud"'),
    ("string: high surrogate then \\u at end", '"\\ud800\\u'),
    ("string: high surrogate then backslash at end", '"\\ud800\\'),
    ("string: high surrogate then 3 hex at end", '"\\ud800\\udc0'),
    ("string: surrogate pair then end", '"\\ud800\\udc00'),
    ("string: high surrogate then text", '"\\ud800x"'),
    ("string: high surrogate then \\n", '"\\ud800\\n"'),
    ("string: raw DEL accepted", '"a\x7fb"'),
    ("string: raw tab in key", '{"a\tb":1}'),
    ("string: raw newline in value", '{"a":"x\ny"}'),
    ("string: raw U+2028 accepted", '"\u2028"'),
    ("string: escaped NUL accepted", '"\\u0000"'),
]:
    add(name, text)

for code in range(0x20):
    add(f"string: raw control character 0x{code:02x}", f'"a{chr(code)}b"')

# ---- byte order marks and invalid UTF-8 ---------------------------------------------------

for name, data in [
    ("BOM before object", b"\xef\xbb\xbf{}"),
    ("BOM alone", b"\xef\xbb\xbf"),
    ("BOM after whitespace", b" \xef\xbb\xbf{}"),
    ("BOM inside a string", b'"\xef\xbb\xbf"'),
    ("BOM as array element", b"[\xef\xbb\xbf]"),
    ("UTF-16LE BOM", b"\xff\xfe{\x00}\x00"),
    ("UTF-16BE text", b"\x00[\x00]"),
    ("utf8: lone continuation byte", b"\x80"),
    ("utf8: continuation byte in string", b'"a\xbf"'),
    ("utf8: overlong C0 80", b'"\xc0\x80"'),
    ("utf8: overlong C1 BF", b'"\xc1\xbf"'),
    ("utf8: overlong E0 80 80", b'"\xe0\x80\x80"'),
    ("utf8: overlong E0 9F BF", b'"\xe0\x9f\xbf"'),
    ("utf8: overlong F0 80 80 80", b'"\xf0\x80\x80\x80"'),
    ("utf8: overlong F0 8F BF BF", b'"\xf0\x8f\xbf\xbf"'),
    ("utf8: surrogate ED A0 80", b'"\xed\xa0\x80"'),
    ("utf8: surrogate ED BF BF", b'"\xed\xbf\xbf"'),
    ("utf8: CESU-8 surrogate pair", b'"\xed\xa0\xbd\xed\xb8\x80"'),
    ("utf8: above U+10FFFF F4 90 80 80", b'"\xf4\x90\x80\x80"'),
    ("utf8: F5 lead byte", b'"\xf5\x80\x80\x80"'),
    ("utf8: F8 lead byte", b'"\xf8\x88\x80\x80\x80"'),
    ("utf8: FE byte", b'"\xfe"'),
    ("utf8: FF byte", b'"\xff"'),
    ("utf8: truncated 2-byte at end", b'"\xc3'),
    ("utf8: truncated 3-byte (1 of 3) at end", b'"\xe2'),
    ("utf8: truncated 3-byte (2 of 3) at end", b'"\xe2\x82'),
    ("utf8: truncated 4-byte (1 of 4) at end", b'"\xf0'),
    ("utf8: truncated 4-byte (2 of 4) at end", b'"\xf0\x9f'),
    ("utf8: truncated 4-byte (3 of 4) at end", b'"\xf0\x9f\x98'),
    ("utf8: overlong E0 80 truncated at end", b'"\xe0\x80'),
    ("utf8: surrogate ED A0 truncated at end", b'"\xed\xa0'),
    ("utf8: overlong F0 80 truncated at end", b'"\xf0\x80'),
    ("utf8: F4 90 truncated at end", b'"\xf4\x90'),
    ("utf8: bad 3rd byte of 4 truncated at end", b'"\xf0\x9f\x41'),
    ("utf8: bad 2nd byte of 2", b'"\xc3\x41"'),
    ("utf8: bad 2nd byte of 3", b'"\xe2\x41\x82"'),
    ("utf8: bad 3rd byte of 3", b'"\xe2\x82\x41"'),
    ("utf8: bad 2nd byte of 4", b'"\xf0\x41\x98\x80"'),
    ("utf8: bad 3rd byte of 4", b'"\xf0\x9f\x41\x80"'),
    ("utf8: bad 4th byte of 4", b'"\xf0\x9f\x98\x41"'),
    ("utf8: lead byte followed by lead byte", b'"\xc3\xc3\xa9"'),
    ("utf8: error after multibyte characters", b'"\xc3\xa9\xf0\x9f\x98\x80\xff"'),
    ("utf8: error far into a document", b'{"k": "' + b"x" * 100 + b'\x80"}'),
    ("utf8: valid character outside a string", "\u00e9"),
    ("utf8: valid non-BMP string", '"\U0001F600"'),
]:
    add(name, data)

# ---- error positions: lines, columns, code points ------------------------------------------

for name, text in [
    ("position: error on third line", '{\n  "a": 1,\n  "b": x\n}'),
    ("position: unclosed array over lines", "[\n1,\n2\n"),
    ("position: newlines only", "\n\n\n"),
    ("position: CRLF counts CR as a column", '{\r\n"a":1\r\n,}'),
    ("position: CR only line endings", '{\r"a":1\r,}'),
    ("position: tabs before extra data", "\t\t1 x"),
    ("position: extra data after non-BMP string", '"\U0001F600\U0001F600"x'),
    ("position: non-BMP on earlier line", '["\U0001F600", "\U0001F600",\n "\U0001F600" x]'),
    ("position: bad escape after non-BMP key", '{"\U0001F600":"\\u12"}'),
    ("position: control character after non-BMP", '"\U0001F600\x01"'),
    ("position: trailing comma after non-BMP line", '[\n"\U0001F600"\n,]'),
    ("position: unterminated string after non-BMP", '["\U0001F600\U0001F600", "abc'),
    ("position: BMP multibyte before error", '["\u00e9\u20ac", x]'),
    ("position: error right after newline", "[1,\n]"),
]:
    add(name, text)

# ---- duplicate member names ---------------------------------------------------------------

for name, text in [
    ("duplicate: plain", '{"a":1,"a":2}'),
    ("duplicate: not adjacent", '{"a":1,"b":2,"a":3}'),
    ("duplicate: equal values", '{"a":1,"a":1}'),
    ("duplicate: via escape second", '{"a":1,"\\u0061":2}'),
    ("duplicate: via escape first", '{"\\u0061":1,"a":2}'),
    ("duplicate: empty name", '{"":1,"":2}'),
    ("duplicate: two pairs, first repeated wins", '{"a":1,"a":2,"b":3,"b":4}'),
    ("duplicate: first repetition in document order wins", '{"b":1,"a":2,"b":3,"a":4}'),
    ("duplicate: inner object closes first", '{"x":{"b":1,"b":2},"x":3}'),
    ("duplicate: same name in different objects is fine", '{"a":{"a":1},"b":[{"a":1},{"a":2}]}'),
    ("duplicate: deep inside arrays", '[[{"k":1,"k":1}]]'),
    ("duplicate: syntax error later in the object wins", '{"a":1,"a":2,}'),
    ("duplicate: unterminated object wins", '{"a":1,"a":2'),
    ("duplicate: garbage later in the object wins", '{"a":1,"a":2 x}'),
    ("duplicate: then trailing data", '{"a":1,"a":2} x'),
    ("duplicate: name with single quote", '{"it\'s":1,"it\'s":2}'),
    ("duplicate: name with double quote", '{"say \\"hi\\"":1,"say \\"hi\\"":2}'),
    ("duplicate: name with both quotes", '{"\'\\"":1,"\'\\"":2}'),
    ("duplicate: name with backslash", '{"a\\\\b":1,"a\\\\b":2}'),
    ("duplicate: name with newline", '{"a\\nb":1,"a\\nb":2}'),
    ("duplicate: name with NUL", '{"\\u0000":1,"\\u0000":2}'),
    ("duplicate: non-BMP name", '{"\U0001F600":1,"\\ud83d\\ude00":2}'),
    ("duplicate: lone surrogate name", '{"\\ud800":1,"\\ud800":2}'),
    ("duplicate: no-break space name", '{"\\u00a0":1,"\\u00a0":2}'),
    ("duplicate: zero-width space name", '{"\\u200b":1,"\\u200b":2}'),
    ("duplicate: private-use name", '{"\\ue000":1,"\\ue000":2}'),
    ("duplicate: line separator name", '{"\\u2028":1,"\\u2028":2}'),
    ("duplicate: printable accented name", '{"\u00e9":1,"e\\u0301":2,"\\u00e9":3}'),
    ("duplicate: __proto__", '{"__proto__":1,"__proto__":2}'),
    ("duplicate: integer-like names", '{"1":1,"0":2,"1":3}'),
]:
    add(name, text)

# ---- integers and floats ------------------------------------------------------------------

for name, text in [
    ("integer: 15 digits", "123456789012345"),
    ("integer: 16 digits", "1234567890123456"),
    ("integer: 17 digits", "12345678901234567"),
    ("integer: max safe", "9007199254740991"),
    ("integer: max safe + 1", "9007199254740992"),
    ("integer: max safe + 2", "9007199254740993"),
    ("integer: negative 15 digits", "-123456789012345"),
    ("integer: negative 16 digits", "-1234567890123456"),
    ("integer: negative 17 digits", "-12345678901234567"),
    ("integer: min safe - 2", "-9007199254740993"),
    ("integer: 4300 digits", "1" + "0" * 4299),
    ("integer: 4301 digits", "1" + "0" * 4300),
    ("integer: negative 4300 digits", "-" + "9" * 4300),
    ("integer: negative 4301 digits", "-" + "9" * 4301),
    ("integer: 4301 digits beats later syntax error", "[" + "1" * 4301 + " x"),
    ("integer: 4301 digits beats duplicate", '{"a":1,"a":' + "1" * 4301 + "}"),
    ("integer: zero", "0"),
    ("integer: negative zero", "-0"),
    ("integer: negative zero in array", "[-0,0]"),
    ("float: negative zero", "-0.0"),
    ("float: zero", "0.0"),
    ("float: negative zero exponent", "-0e0"),
    ("float: 1E400 overflows to inf", "1E400"),
    ("float: -1E400 overflows to -inf", "-1E400"),
    ("float: 1e-400 underflows to 0.0", "1e-400"),
    ("float: -1e-400 underflows to -0.0", "-1e-400"),
    ("float: exponent with plus", "1E+2"),
    ("float: exponent with leading zero", "1e02"),
    ("float: 1.0", "1.0"),
    ("float: 1e16", "1e16"),
    ("float: 1e15", "1e15"),
    ("float: 1e22", "1e22"),
    ("float: 0.0001", "0.0001"),
    ("float: 0.00001", "0.00001"),
    ("float: 1.5e300", "1.5e300"),
    ("float: 5e-324", "5e-324"),
    ("float: 2.5e-324 rounds to 5e-324", "2.5e-324"),
    ("float: max", "1.7976931348623157e308"),
    ("float: 123456789.123", "123456789.123"),
    ("float: 0.1", "0.1"),
    ("float: 1.1e-7", "1.1e-7"),
    ("float: 100.0", "100.0"),
    ("float: 12345678901234567890.0", "12345678901234567890.0"),
    ("float: 9007199254740993.0 rounds", "9007199254740993.0"),
    ("float: long mantissa", "3.14159265358979323846264338327950288"),
    ("float: negative fraction", "-2.5"),
    ("float: nested deep in object", '{"a":[{"b":1.5}]}'),
    ("float: in a key-sorted-late member", '{"z":1.0,"a":1}'),
    ("float: wins over lone surrogate", '{"a":"\\ud800","b":1.0}'),
    ("float: NaN in array", "[NaN]"),
    ("float: Infinity in object", '{"x":Infinity}'),
    ("canonical: big integers", '{"n":123456789012345678901234567890,"m":-9007199254740993}'),
    ("canonical: 4300-digit integer in array", "[" + "7" * 4300 + "]"),
]:
    add(name, text)

# ---- canonical form: ordering and escaping -------------------------------------------------

RFC8785_SORTING = (
    '{"\\u20ac":"Euro Sign","\\r":"Carriage Return","\\ufb33":"Hebrew Letter Dalet With Dagesh",'
    '"1":"One","\\ud83d\\ude00":"Emoji: Grinning Face","\\u0080":"Control",'
    '"\\u00f6":"Latin Small Letter O With Diaeresis"}'
)
for name, text in [
    ("order: non-BMP after U+E000", '{"\\ud83d\\ude00":2,"\\ue000":1}'),
    ("order: non-BMP after U+FFFF", '{"\\ud800\\udc00":2,"\\uffff":1,"\\ud7ff":3}'),
    ("order: RFC 8785 sorting example (code points, not UTF-16)", RFC8785_SORTING),
    ("order: ASCII, prefixes and empty", '{"b":1,"a":2,"aa":3,"A":4,"":5,"a ":6}'),
    ("order: integer-like names", '{"10":1,"2":2,"1":3,"0":4,"-1":5}'),
    ("order: __proto__ and constructor", '{"constructor":1,"__proto__":2,"toString":3}'),
    ("order: nested objects sorted too", '{"b":{"y":1,"x":2},"a":[{"d":1,"c":2}]}'),
    ("order: lone surrogates sort between BMP and private use",
     '{"\\ue000":1,"\\ud800":2,"\\ud7ff":3}'),
    ("escape: U+007F stays raw", '"\\u007f"'),
    ("escape: U+2028 and U+2029 stay raw", '"\\u2028\\u2029"'),
    ("escape: C0 controls", '"\\u0000\\u0001\\u001f\\b\\f\\n\\r\\t\\u000b"'),
    ("escape: U+0080 stays raw", '"\\u0080"'),
    ("escape: solidus is not escaped", '"\\/"'),
    ("escape: quote and backslash", '"\\"\\\\"'),
    ("escape: RFC 8785 string example", '"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/"'),
    ("escape: RFC 8785 literals example", "[null, true, false]"),
    ("escape: non-BMP stays raw", '"\\ud83d\\ude00\U0001F600"'),
    ("escape: controls in keys", '{"\\u0001":1,"\\n":2}'),
    ("escape: text that looks like an escape", '"\\\\ud800"'),
]:
    add(name, text)

# ---- lone surrogates at canonicalisation --------------------------------------------------

for name, text in [
    ("surrogate: lone high in value", '"\\ud800"'),
    ("surrogate: lone low in array", '["x","\\udfff"]'),
    ("surrogate: lone in key", '{"\\ud800":1}'),
    ("surrogate: lone in nested value", '{"a":{"b":["\\udbff"]}}'),
    ("surrogate: run of two", '"\\ud800\\ud800"'),
    ("surrogate: low then high", '"\\udc00\\ud800"'),
    ("surrogate: run of three lows", '"\\udc00\\udc00\\udc00"'),
    ("surrogate: pair then lone", '"a\\ud800\\udc00\\ud800"'),
    ("surrogate: lone then pair", '"\\ud800\\ud83d\\ude00"'),
    ("surrogate: after a non-BMP character", '"\U0001F600\\ud800"'),
    ("surrogate: after non-BMP key in canonical order", '{"\U0001F600":"\\udc00"}'),
    ("surrogate: two members, sorted order decides", '{"b":"\\ud800","a":"\\udc00"}'),
    ("surrogate: two separate strings, first reported", '["\\ud800","\\udbff"]'),
    ("surrogate: runs separated by a character", '"\\ud800x\\ud800\\ud800"'),
    ("surrogate: with escaped characters before", '"\\n\\"\\u0001\\ud800"'),
    ("surrogate: repr of mixed text", '"a\\ud800b\\udfffc"'),
]:
    add(name, text)

# ---- repr ---------------------------------------------------------------------------------

for name, text in [
    ("repr: single quote picks double quotes", '"it\'s"'),
    ("repr: double quote keeps single quotes", '"say \\"hi\\""'),
    ("repr: both quotes", '"both \' and \\""'),
    ("repr: backslash", '"back\\\\slash"'),
    ("repr: C0 controls and DEL", '"\\u0000\\u0007\\t\\n\\r\\u001b\\u007f"'),
    ("repr: C1 controls, no-break space, soft hyphen", '"\\u0080\\u009f\\u00a0\\u00ad"'),
    ("repr: line separator and ideographic space", '"\\u2028\\u3000"'),
    ("repr: private use and noncharacters", '"\\ue000\\ufffe\\uffff"'),
    ("repr: unassigned BMP code point", '"\\u0378"'),
    ("repr: printable non-ASCII", '"\u00e9\u20ac\u4e2d"'),
    ("repr: emoji", '"\U0001F600"'),
    ("repr: mathematical digit", '"\U0001D7CF"'),
    ("repr: non-BMP private use", '"\\udb80\\udc00"'),
    ("repr: lone surrogates", '["\\ud800","\\udfff"]'),
    ("repr: nested containers", '{"a":[1,true,null,false,1.5,"x"],"b":{},"c":[[]]}'),
    ("repr: dict with quoted keys", '{"it\'s":"\\"","\\\\":"\\u0000"}'),
    ("repr: large integers", "[12345678901234567890,-12345678901234567890]"),
    ("repr: floats", "[1e16,1e15,0.0001,0.00001,1.5e300,5e-324,123456789.123,-0.0,1E400]"),
    ("repr: keys keep document order", '{"b":1,"a":2,"1":3,"0":4,"__proto__":5}'),
]:
    add(name, text)

# Characters assigned after Unicode 14.0: CPython 3.11 (Unicode 14 tables) calls them
# unassigned and escapes them in repr; newer Pythons and Node's ICU print them raw.
UNICODE_VERSION_NOTE = (
    "CPython 3.11 has Unicode 14.0 tables, so repr() escapes characters assigned later; Node's "
    "ICU is newer, so pyRepr prints them raw, as CPython 3.12+ does for Unicode 15.0 additions"
)
for name, char in [
    ("repr: Unicode 15.0 emoji (shaking face)", "\U0001FAE8"),
    ("repr: Unicode 15.1 CJK ideograph", "\U0002EBF0"),
]:
    text = json.dumps(char, ensure_ascii=False)
    python = python_outcome(text.encode("utf-8"))
    ours = {**python, "repr": "'" + char + "'"}
    add(name, text, known_difference=UNICODE_VERSION_NOTE, ours=ours)

# ---- nesting depth ------------------------------------------------------------------------


def nested_arrays(depth: int) -> str:
    return "[" * depth + "]" * depth


def nested_objects(depth: int) -> str:
    return '{"a":' * (depth - 1) + "{}" + "}" * (depth - 1)


def mixed(depth: int) -> str:
    opening = "".join("[" if level % 2 == 0 else '{"k":' for level in range(depth))
    closing = "".join("]" if level % 2 == 0 else "}" for level in reversed(range(depth)))
    return opening + "0" + closing


def first_failing_depth(build: Callable[[int], str]) -> int:
    """Shallowest depth at which this interpreter raises RecursionError, at this stack depth."""
    depth = 1
    while python_outcome(build(depth).encode())["ok"]:
        depth += 1
    return depth


def container_at(text: str, level: int) -> str | None:
    """Kind of the `level`-th container opened (1-based); these documents have no brackets in
    their strings, so counting brackets is enough."""
    opened = 0
    for char in text:
        if char in "[{":
            opened += 1
            if opened == level:
                return "array" if char == "[" else "object"
    return None


def nesting_case(name: str, text: str, python_limit: int) -> None:
    case = add(name, text)
    python = case["outcome"]
    python_gives_up = python.get("error_type") == "RecursionError"
    our_failing_container = container_at(text, OUR_MAX_DEPTH + 1)
    threshold = (
        f"Python's limit comes from the interpreter stack (recursion limit "
        f"{sys.getrecursionlimit()}; this script first fails at depth {python_limit}, the "
        f"CLI's deeper stack a little earlier), ours is a fixed {OUR_MAX_DEPTH} levels"
    )
    if python_gives_up != (our_failing_container is not None):
        case["known_difference"] = threshold
        case["ours"] = (
            outcome_without_recursion_limit(text.encode())
            if our_failing_container is None
            else {"ok": False, "error_type": "RecursionError"}
        )
    elif python_gives_up and f"a JSON {our_failing_container} " not in python["message"]:
        # Both give up, but Python's text names the container its stack ran out in, and at
        # our limit the container is of the other kind.
        case["known_difference"] = (
            f"{threshold}; Python's message names the container at its own limit, which is not "
            f"the kind ({our_failing_container}) at ours"
        )
        case["ours"] = {"ok": False, "error_type": "RecursionError"}


def nested_arrays_unclosed(depth: int) -> str:
    return "[" * depth


def nested_objects_unclosed(depth: int) -> str:
    return '{"a":' * depth


for kind, build, unclosed in [
    ("arrays", nested_arrays, nested_arrays_unclosed),
    ("objects", nested_objects, nested_objects_unclosed),
    ("mixed", mixed, None),
]:
    python_limit = first_failing_depth(build)
    for depth in (50, 500, 900, 990, 1000, 1001, 5000):
        nesting_case(f"nesting: {depth} {kind}", build(depth), python_limit)
    if unclosed is not None:
        nesting_case(f"nesting: 500 unclosed {kind}", unclosed(500), python_limit)
        nesting_case(f"nesting: 5000 unclosed {kind}", unclosed(5000), python_limit)

add("nesting: deep value then syntax error", "[" * 50 + "1,]" + "]" * 49)
add("nesting: deep object then duplicate", '{"a":' * 60 + '{"k":1,"k":2}' + "}" * 60)

# ---- write --------------------------------------------------------------------------------

OUTPUT.parent.mkdir(parents=True, exist_ok=True)
with OUTPUT.open("w", encoding="ascii", newline="\n") as out:
    out.write("[\n")
    out.write(",\n".join(json.dumps(case, ensure_ascii=True) for case in cases))
    out.write("\n]\n")
print(f"wrote {len(cases)} cases to {OUTPUT}")

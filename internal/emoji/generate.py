#!/usr/bin/env python3
"""Generates the emoji table package emoji embeds (emoji.go).

    python3 internal/emoji/generate.py EMOJI_NAMES_PY

EMOJI_NAMES_PY is Zulip's tools/setup/emoji/emoji_names.py (zulite's
copy was made from zulip/zulip commit
30495cec580152af0b86effae8c2a4d7f418ed09): its EMOJI_NAME_MAPS is the
one table Zulip builds name_to_codepoint, codepoint_to_name and
emoji_api.json's code_to_names from (tools/setup/emoji/build_emoji).
Codes are written without U+FE0F, as Zulip's renderer compares them
(unqualify_emoji).

Needs the `regex` module (Debian: python3-regex) for the
Emoji_Presentation property.

emoji.txt: one emoji a line, "code flags name alias...", space-separated;
flags is "t" when Zulip leaves the emoji as text if typed bare (its first
code point lacks Emoji_Presentation: zerver/lib/markdown's
TEXT_PRESENTATION_RE), else "-".
emoji.txt.gz: emoji.txt gzipped, which the binary embeds (a third of its
size; emoji_test.go checks that it is emoji.txt).
emoji_property.txt: the code point ranges with Unicode's Emoji property,
"first-last" in hex, one a line: where the renderer looks for Unicode
emoji (Zulip's POSSIBLE_EMOJI_RE, UTS #51's EBNF).
"""

import ast
import gzip
import os
import sys

import regex


def emoji_name_maps(path):
    tree = ast.parse(open(path, encoding="utf-8").read())
    for node in tree.body:
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == "EMOJI_NAME_MAPS" for t in targets):
            return ast.literal_eval(node.value)
    sys.exit("no EMOJI_NAME_MAPS in " + path)


def main():
    emoji_path = sys.argv[1]
    out = os.path.dirname(os.path.abspath(__file__))
    lines = []
    seen = set()
    for key, info in emoji_name_maps(emoji_path).items():
        code = "-".join(p for p in key.split("-") if p != "fe0f")
        if code in seen:
            sys.exit("two emoji share the code " + code)
        seen.add(code)
        points = code.split("-")
        flags = "-"
        if len(points) == 1 or (len(points) == 2 and points[1] == "20e3"):
            if not regex.fullmatch(r"\p{Emoji_Presentation}", chr(int(points[0], 16))):
                flags = "t"
        lines.append(" ".join([code, flags, info["canonical_name"], *info["aliases"]]))
    lines.sort()
    table = ("\n".join(lines) + "\n").encode("utf-8")
    with open(os.path.join(out, "emoji.txt"), "wb") as f:
        f.write(table)
    with open(os.path.join(out, "emoji.txt.gz"), "wb") as f:
        f.write(gzip.compress(table, compresslevel=9, mtime=0))

    ranges = []
    emoji = regex.compile(r"\p{Emoji}")
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF or not emoji.match(chr(cp)):
            continue
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    with open(os.path.join(out, "emoji_property.txt"), "w", encoding="utf-8") as f:
        f.write("".join(f"{a:x}-{b:x}\n" for a, b in ranges))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Generates the data file the Markdown renderer embeds (links.go).

    python3 internal/markdown/generate.py PUBLIC_SUFFIX_LIST

PUBLIC_SUFFIX_LIST is the Public Suffix List (Debian's
publicsuffix package: /usr/share/publicsuffix/public_suffix_list.dat);
its ICANN section's one-label entries are the top-level domains, the list
Zulip's link regex takes from the tlds package. The emoji table is
internal/emoji's (internal/emoji/generate.py).

tlds.txt: one top-level domain a line, ASCII ones only, without the file
extensions Zulip leaves out (java, md, mov, py, zip).
"""

import os
import sys


def main():
    psl_path = sys.argv[1]
    out = os.path.dirname(os.path.abspath(__file__))
    tlds = set()
    icann = False
    for line in open(psl_path, encoding="utf-8"):
        line = line.strip()
        if "===BEGIN ICANN DOMAINS===" in line:
            icann = True
        elif "===END ICANN DOMAINS===" in line:
            icann = False
        elif icann and line and not line.startswith("//") and "." not in line and line.isascii():
            tlds.add(line.lower())
    tlds -= {"java", "md", "mov", "py", "zip"}
    with open(os.path.join(out, "tlds.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(sorted(tlds)) + "\n")


if __name__ == "__main__":
    main()

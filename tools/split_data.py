#!/usr/bin/env python3
"""Turn the six Austen novels (one raw Gutenberg-wrapped file per novel) into training and validation text.

- Paragraphs are unwrapped (hard line breaks inside a paragraph become spaces), one paragraph per line.
- Gutenberg italics markers (_word_) are removed.
- The held-out validation text is the final chapters of the last novel (Persuasion), about 2% of all text.
- tools/data/heldout_prompts.txt: 40 Austen prompts of 20-40 words taken from the held-out chapters.

Usage: split_data.py BOOKS_DIR OUT_DIR
"""
import os
import re
import sys


def paragraphs(lines):
    out, cur = [], []
    for ln in lines:
        s = ln.strip()
        if not s:
            if cur:
                out.append(" ".join(cur))
                cur = []
        else:
            cur.append(s)
    if cur:
        out.append(" ".join(cur))
    clean = []
    for p in out:
        p = p.replace("_", "")
        p = re.sub(r"\s+", " ", p).strip()
        if p:
            clean.append(p)
    return clean


def main():
    if len(sys.argv) != 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr if len(sys.argv) != 2 else sys.stdout)
        sys.exit(0 if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help") else 2)
    books_dir, out_dir = sys.argv[1], sys.argv[2]
    names = open(os.path.join(books_dir, "names.txt"), encoding="utf-8").read().splitlines()
    books = []
    for i in range(1, len(names) + 1):
        with open(os.path.join(books_dir, f"{i}.txt"), encoding="utf-8", errors="replace") as f:
            books.append(paragraphs(f.read().splitlines()))
    total = sum(len(p) + 1 for b in books for p in b)
    # Held out: the last chapters of the last novel, at least 2% of all characters.
    last = books[-1]
    chapter_starts = [i for i, p in enumerate(last) if re.match(r"^(CHAPTER|Chapter)\s+[0-9IVXLC]+\.?$", p)]
    split_at = None
    for i in reversed(chapter_starts):
        tail = sum(len(p) + 1 for p in last[i:])
        if tail >= 0.02 * total:
            split_at = i
            break
    assert split_at is not None, "could not find chapter headings in the last novel"
    train_books = books[:-1] + [last[:split_at]]
    val = last[split_at:]
    os.makedirs(out_dir, exist_ok=True)
    # Novels are separated by a blank line in the text file; the tokenizer/trainer treats "\n\n" as the
    # document boundary and inserts <|endoftext|> there.
    with open(os.path.join(out_dir, "austen_train.txt"), "w", encoding="utf-8") as f:
        f.write("\n\n".join("\n".join(b) for b in train_books) + "\n")
    with open(os.path.join(out_dir, "austen_val.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(val) + "\n")
    # Prompts: 40 paragraphs with >= 20 words spread over the held-out text, cut to 20..40 words.
    cands = [p for p in val if len(p.split()) >= 20]
    n = 40
    assert len(cands) >= n, f"only {len(cands)} candidate paragraphs"
    prompts = []
    for k in range(n):
        p = cands[(k * len(cands)) // n].split()
        want = 20 + (k * 7) % 21
        prompts.append(" ".join(p[:min(want, len(p))]))
    with open(os.path.join(out_dir, "heldout_prompts.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(prompts) + "\n")
    vchars = sum(len(p) + 1 for p in val)
    print(f"books: {names}")
    print(f"total chars {total}, held out {vchars} ({100.0 * vchars / total:.2f}%) from chapter paragraph {split_at} of {names[-1]}")


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# Prepare the training / validation text for the bundled tiny model pair.
# Source: Debian package r-cran-janeaustenr (the six Jane Austen novels, public domain, from Project Gutenberg),
# unpacked without installing it; needs Rscript (apt-get install r-base-core) to read the R data file.
# Output: tools/data/austen_train.txt, tools/data/austen_val.txt (+ tools/data/heldout_prompts.txt).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
OUT="$HERE/data"
mkdir -p "$OUT"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"
command -v Rscript >/dev/null || { echo "prepare_data.sh needs Rscript: apt-get install -y r-base-core" >&2; exit 1; }
apt-get download r-cran-janeaustenr >/dev/null 2>&1 || { echo "apt-get download r-cran-janeaustenr failed (run apt-get update?)"; exit 1; }
dpkg-deb -x r-cran-janeaustenr_*.deb ja
export R_LIBS="$TMP/ja/usr/lib/R/site-library"
mkdir -p books
# One file per novel, in the package's order (Sense & Sensibility, Pride & Prejudice, Mansfield Park, Emma,
# Northanger Abbey, Persuasion). Base R only.
Rscript --vanilla -e '
  library(janeaustenr)
  b <- austen_books()
  books <- levels(b$book)
  for (i in seq_along(books)) {
    writeLines(as.character(b$text[b$book == books[i]]), sprintf("books/%d.txt", i), useBytes = TRUE)
  }
  writeLines(books, "books/names.txt")
' 2>/dev/null
/usr/bin/python3 "$HERE/split_data.py" "$TMP/books" "$OUT"

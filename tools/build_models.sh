#!/usr/bin/env bash
# Rebuild the bundled tiny Llama pair from scratch (CPU only; about 2 hours on 2 cores).
#   apt-get install -y python3-torch python3-numpy python3-regex r-base-core   (Debian bookworm)
#   bash tools/build_models.sh [TARGET_MINUTES] [DRAFT_MINUTES]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
TM="${1:-66}"
DM="${2:-18}"
bash tools/prepare_data.sh
$PY tools/bpe.py train --input tools/data/austen_train.txt tools/data/austen_val.txt --vocab-size 4096 --out tools/runs/tokenizer
mkdir -p tools/runs/target tools/runs/draft
$PY tools/train.py --role target --minutes "$TM" --out tools/runs/target 2>&1 | tee tools/runs/target/train.log
$PY tools/export.py --ckpt tools/runs/target/ckpt.pt --out public/models/austen-target
$PY tools/train.py --role draft --minutes "$DM" --teacher public/models/austen-target --out tools/runs/draft 2>&1 | tee tools/runs/draft/train.log
$PY tools/export.py --ckpt tools/runs/draft/ckpt.pt --out public/models/austen-draft
# Self-distillation: the draft fine-tuned on the target's own greedy continuations (what it predicts at inference).
mkdir -p tools/runs/draft-sd
$PY tools/self_distill.py --teacher public/models/austen-target --draft public/models/austen-draft --out tools/runs/draft-sd --gen-minutes 5 --minutes 14 --gen-batch 64 2>&1 | tee tools/runs/draft-sd/train.log
$PY tools/export.py --ckpt tools/runs/draft-sd/ckpt.pt --out public/models/austen-draft
$PY tools/make_fixture.py
# auto's acceptance prior for the new draft (needs the npm install; the heads' is measured after they are retrained).
npx tsx tools/acceptance.ts --heads '' --write
$PY tools/eval.py

"""One-line errors for the tools: a mistake in what the user passed (a missing file, a folder of the wrong kind) is
`error: <what>` on stderr and exit status 2, not a traceback. TOOLS_TRACEBACK=1 shows the traceback as well."""
import os
import sys


def fail(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def require_torch():
    """The tools need Debian's PyTorch and NumPy: where they are missing, say so in one line (not a traceback)."""
    try:
        import numpy  # noqa: F401
        import torch  # noqa: F401
    except ImportError as e:
        install = ("apt-get install -y python3-torch python3-numpy python3-regex libopenblas0-pthread "
                   "(tools/README.md)")
        if any(a in ("-h", "--help") for a in sys.argv[1:]):
            # --help answers without them: the tool's own description, and what its options need.
            print((sys.modules["__main__"].__doc__ or "").strip())
            print(f"\n(PyTorch and NumPy are missing here ({e.name or e}), so its options cannot be listed: {install})")
            sys.exit(0)
        fail(f"this tool needs PyTorch and NumPy ({e.name or e} is missing): {install}")


def run(main):
    """Call main(); a missing file anywhere in it is one line naming the file."""
    try:
        main()
    except FileNotFoundError as e:
        if os.environ.get("TOOLS_TRACEBACK"):
            raise
        fail(f"no such file or folder: {e.filename}")


def refuse_model_folder(out_dir, what):
    """Heads are exported into a folder of their own: never over a language model's (its config.json and weights)."""
    cfg = os.path.join(out_dir, "config.json")
    if os.path.exists(os.path.join(out_dir, "tokenizer.json")) or (
        os.path.exists(cfg) and "model_type" in open(cfg).read() and not any(
            k in open(cfg).read() for k in ("medusa_num_heads", "draft_vocab_size", '"bias"'))):
        fail(f"{out_dir} holds a language model (config.json, tokenizer.json): {what} would overwrite it; "
             "export into a folder of its own")

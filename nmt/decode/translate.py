"""``nmt translate``: stream text through a checkpoint, one output line per input line.

Input is read in chunks so a file of any size needs memory for one chunk only;
on a terminal, or with ``--flush``, each line is translated as soon as it arrives.
A file output is written under a temporary name and renamed when complete, so
an interrupted run never leaves a file that looks finished; the temporary is removed on
Ctrl-C, SIGTERM and SIGHUP, and one left by a process killed outright is removed by the
next translation into the same file.  The file it replaces keeps its permission bits, and
a read-only one is never replaced, nor a symbolic link, nor the input file (by any path
to it): the translation would replace the text it translates.  A character device or a FIFO
(``-o /dev/null``, a named pipe) is written into as it comes, never replaced
(:func:`nmt.util.fileio.atomic_write`).  ``--alignments`` writes a second
file the same way: each output line's word alignment, as ``nmt align`` gives it for the pair
(input line, output line) (:mod:`nmt.decode.alignment`).
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import stat
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Optional

from nmt.decode.alignment import AttentionChoice, align_pairs, check_alignable
from nmt.decode.batched import Translation
from nmt.decode.engines import Engine
from nmt.decode.request import Search, resolve_search, translate_lines
from nmt.util.errors import DataError, UserError
from nmt.util.fileio import atomic_write, check_writable_kind, decode_lines, remove_stale_temporaries, stream_kind
from nmt.util.out_paths import check_not_link
from nmt.util.signal_trap import stops_unwind

log = logging.getLogger(__name__)

CHUNK_LINES = 2048


def read_chunks(stream: IO[bytes], name: str, size: int = CHUNK_LINES) -> Iterator[list[str]]:
    """Strict UTF-8 lines (:func:`~nmt.util.fileio.decode_lines`) in chunks of ``size``.

    A line holding a NUL byte is refused as well: the start of a binary file often decodes
    as UTF-8, and translating it would only produce a file of nonsense.
    """
    chunk: list[bytes] = []
    first = 1  # number of the chunk's first line
    for number, raw in enumerate(stream, start=1):
        if b"\x00" in raw:
            raise DataError(f"{name}: line {number} holds NUL bytes; is this a binary file?")
        chunk.append(raw)
        if len(chunk) == size:
            yield decode_lines(b"".join(chunk), name, first_line=first)
            first, chunk = number + 1, []
    if chunk:
        yield decode_lines(b"".join(chunk), name, first_line=first)


def format_lines(
    results: list[Translation], detok: Callable[[list[int]], str], n_best: int, first_index: int
) -> list[str]:
    """Plain translations, or ``index<TAB>score<TAB>text`` rows for n-best lists."""
    if n_best == 1:
        return [detok(r.ids[0]) for r in results]
    rows = []
    for offset, result in enumerate(results):
        for ids, score in zip(result.ids[:n_best], result.scores[:n_best]):
            rows.append(f"{first_index + offset}\t{score:.4f}\t{detok(ids)}")
    return rows


def write_attention(
    folder: Path, index: int, result: Translation, src_pieces: list[str], tgt_pieces: list[str]
) -> None:
    """Heat map PNG and JSON weights of one sentence's best hypothesis (EOS row included)."""
    from nmt.util.plots import plot_attention

    weights = result.attention
    if weights is None or not src_pieces:
        return
    stem = folder / f"{index:06d}"
    with atomic_write(stem.with_suffix(".json")) as handle:
        handle.write(json.dumps({"src": src_pieces, "tgt": tgt_pieces, "weights": weights.tolist()}).encode("utf-8"))
    plot_attention(weights, src_pieces, tgt_pieces, stem.with_suffix(".png"), title=f"sentence {index}")


def write_alignments(
    sink: IO[str], engine: Engine, lines: Sequence[str], results: list[Translation], search: Search
) -> None:
    """The Pharaoh line of each output line written (each hypothesis of an n-best list): the output's
    words aligned to its input line's as ``nmt align`` aligns a given pair, the input cut as the search cut it."""
    pairs = [
        (line, engine.tgt_tok.decode(ids))
        for line, result in zip(lines, results)
        for ids in result.ids[: search.n_best]
    ]
    for alignment in align_pairs(engine, [s for s, _ in pairs], [t for _, t in pairs], as_searched=search.decode):
        sink.write(alignment.pharaoh + "\n")


def translate_stream(
    source: IO[bytes],
    name: str,
    sink: IO[str],
    engine: Engine,
    *,
    beam: Optional[int],
    n_best: Optional[int],
    attention_dir: Optional[Path],
    overrides: list[str],
    flush: bool = False,
    align_sink: Optional[IO[str]] = None,
) -> int:
    """Translate every line of ``source`` into ``sink`` with ``engine``; returns the number of input lines.

    With ``flush`` each line is translated and written out before the next is read, so a person
    typing (or a program waiting for each answer) gets it at once.  With ``align_sink``, each
    output line's word alignment goes there (:func:`write_alignments`).
    """
    search = resolve_search(engine, beam, n_best, overrides)  # before waiting for input
    if align_sink is not None:
        check_alignable(engine, AttentionChoice())  # an engine without attention, refused before any input
    if attention_dir is not None:
        if not engine.describe().search_attention:  # refused before the folder is made, not after
            raise UserError(
                f"--attention {attention_dir}: --engine {engine.name} returns no attention weights; "
                "use --engine torch or onnxruntime"
            )
        try:
            attention_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"--attention {attention_dir}: cannot create the folder ({exc.strerror})") from None
    count = nothing = 0
    for chunk in read_chunks(source, name, size=1 if flush else CHUNK_LINES):
        ids, results = translate_lines(
            engine, search, chunk, name=name, first_line=count + 1, attention=attention_dir is not None
        )
        nothing += sum(1 for text, result in zip(chunk, results) if text.strip() and not result.ids[0])
        for line in format_lines(results, engine.tgt_tok.decode, search.n_best, count):
            sink.write(line + "\n")
        if align_sink is not None:
            write_alignments(align_sink, engine, chunk, results, search)
        if attention_dir is not None:
            for i, result in enumerate(results):
                src_pieces = engine.src_tok.decode_pieces(ids[i])
                tgt_pieces = engine.tgt_tok.decode_pieces(result.ids[0]) + ["</s>"]
                write_attention(attention_dir, count + i, result, src_pieces, tgt_pieces)
                engine.write_layer_attention(attention_dir, count + i, ids[i], result.ids[0], src_pieces, tgt_pieces)
        count += len(chunk)
        if flush:
            sink.flush()
            if align_sink is not None:
                align_sink.flush()
    if nothing:
        log.warning(
            "%d of %d lines translated to nothing (an empty line): a model that has not learned to translate "
            "yet ends its output at once; train it longer (configs/multi30k_de_en_class.yaml translates "
            "after 10 minutes on 2 CPU cores)",
            nothing,
            count,
        )
    return count


def check_output(output: Path) -> Optional[int]:
    """Refuse an output path nmt must not replace; return the mode of the file it replaces.

    The write goes to a new file renamed over the old one, so without care a read-only
    file would be replaced and a 0600 file would become world-readable.  Write bits are
    read from the mode as well as ``os.access``, which says yes to everything as root.  A symbolic
    link is refused, to a file or to nothing, as for every output (:func:`~nmt.util.out_paths.check_not_link`).
    A character device or a FIFO is written into (no mode to keep, no file created beside it).
    """
    check_not_link(output, "-o")
    check_writable_kind(output, "-o")
    kind = stream_kind(output)
    if kind is not None:
        if not os.access(output, os.W_OK):
            raise UserError(f"-o {output}: cannot write into {kind} (no write permission)")
        return None
    if output.is_dir():
        raise UserError(f"-o {output}: is a directory; give a file name")
    if output.parent.exists() and not output.parent.is_dir():
        raise UserError(f"-o {output}: {output.parent} is not a directory")
    if output.parent.is_dir() and not os.access(output.parent, os.W_OK | os.X_OK):
        raise UserError(f"-o {output}: cannot create files in {output.parent} (no write permission)")
    if not output.exists():
        return None
    mode = stat.S_IMODE(output.stat().st_mode)
    if mode & 0o222 == 0 or not os.access(output, os.W_OK):
        raise UserError(f"-o {output}: the file is read-only; refusing to replace it")
    return mode


def check_paths(input: Optional[Path], attention_dir: Optional[Path]) -> None:
    """One-line errors for input and attention paths, before the model is loaded."""
    if input is not None and input.is_dir():
        raise UserError(f"-i {input}: is a directory, not a text file")
    if input is not None and not input.is_file():
        raise UserError(f"{input}: input file not found")
    if input is None and sys.stdin is None:
        raise UserError("no input: standard input is closed; give -i FILE or pipe text in")
    if attention_dir is not None and attention_dir.exists() and not attention_dir.is_dir():
        raise UserError(f"--attention {attention_dir}: is a file; give a folder (created if missing)")


def check_alignments_path(alignments: Path, input: Optional[Path], output: Optional[Path]) -> None:
    """Refuse an ``--alignments`` file nmt must not write: a folder, a link, a read-only file, the
    input, or the translations' own file."""
    check_not_link(alignments, "--alignments")
    check_writable_kind(alignments, "--alignments")
    if alignments.is_dir():
        raise UserError(f"--alignments {alignments}: is a directory; give a file name")
    for other, what in ((input, "the input file"), (output, "the -o file")):
        if stream_kind(alignments) is not None:  # a device is written into: -o /dev/null --alignments /dev/null
            break
        if other is not None and (
            other == alignments or (other.exists() and alignments.exists() and os.path.samefile(other, alignments))
        ):
            raise UserError(f"--alignments {alignments}: is {what}; give another file")
    if alignments.exists() and not os.access(alignments, os.W_OK):
        raise UserError(f"--alignments {alignments}: the file is read-only; refusing to replace it")


@contextlib.contextmanager
def alignment_sink(path: Optional[Path]) -> Iterator[Optional[IO[str]]]:
    """A text file for ``--alignments`` that replaces ``path`` only when the block completes (None: no file)."""
    if path is None:
        yield None
        return
    if stream_kind(path) is None:
        remove_stale_temporaries(path)  # of translations into it that were killed outright
    with atomic_write(path) as raw:
        sink = io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
        try:
            yield sink
            sink.flush()
        finally:
            sink.detach()


def check_not_input(input: Optional[Path], output: Path) -> None:
    """Refuse an output that is the input file (or standard input's file): the translation
    would replace the text it translates.

    Compared by device and inode, so another path, a symlink or a hard link to the input
    is found as well; an output that does not exist yet cannot be the input.
    """
    try:
        target = os.stat(output)
    except OSError:
        return
    if not stat.S_ISREG(target.st_mode):  # a device or a FIFO is written into, never replaced
        return
    if input is not None:
        source = os.stat(input)
        what = f"the input file {input}"
    else:
        try:
            source = os.fstat(sys.stdin.fileno())
        except (AttributeError, OSError, ValueError):  # no file behind stdin (e.g. replaced under a test)
            return
        if not stat.S_ISREG(source.st_mode):  # a pipe or a terminal is no file to lose
            return
        what = "the file standard input reads"
    if (source.st_dev, source.st_ino) == (target.st_dev, target.st_ino):
        raise UserError(
            f"-o {output}: is {what}; writing the translation there would replace the text "
            "it translates (give another output file)"
        )


def translate_file(
    open_engine: Callable[[], Engine],
    input: Optional[Path],
    output: Optional[Path],
    *,
    beam: Optional[int] = None,
    n_best: Optional[int] = None,
    attention_dir: Optional[Path] = None,
    overrides: Sequence[str] = (),
    flush: bool = False,
    alignments: Optional[Path] = None,
) -> int:
    """``nmt translate``: files or stdin/stdout; line by line on a terminal or with ``flush``;
    with ``alignments``, each output line's word alignment into that file.

    ``open_engine`` loads the model, called once the paths have been checked (a wrong path is
    reported before a model is loaded)."""
    input = Path(input) if input is not None else None
    attention_dir = Path(attention_dir) if attention_dir is not None else None
    alignments = Path(alignments) if alignments is not None else None
    check_paths(input, attention_dir)
    if alignments is not None:
        check_alignments_path(alignments, input, Path(output) if output is not None else None)
    if output is not None:
        check_not_input(input, Path(output))
    keep_mode = check_output(Path(output)) if output is not None else None
    if output is None and sys.stdout is None:
        raise UserError("no output: standard output is closed; give -o FILE")
    engine = open_engine()
    with contextlib.ExitStack() as opened:
        # a file given is closed on the way out; standard input is not ours to close
        source = opened.enter_context(open(input, "rb")) if input is not None else sys.stdin.buffer
        flush = flush or source.isatty()
        name = str(input) if input is not None else "<stdin>"

        def translate_into(sink: IO[str], align_sink: Optional[IO[str]]) -> int:
            return translate_stream(
                source,
                name,
                sink,
                engine,
                beam=beam,
                n_best=n_best,
                attention_dir=attention_dir,
                overrides=list(overrides),
                flush=flush,
                align_sink=align_sink,
            )

        if output is None:
            sink = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", line_buffering=True, write_through=True)
            try:  # a stop signal or a reader gone leaves no alignments file that looks finished
                with stops_unwind() if alignments else contextlib.nullcontext(), alignment_sink(alignments) as aligned:
                    return translate_into(sink, aligned)
            except BrokenPipeError:  # the reader went away (e.g. `| head`)
                return 0
            finally:
                sink.detach()
        if stream_kind(Path(output)) is None:
            remove_stale_temporaries(Path(output))  # of translations into it that were killed outright
        with stops_unwind(), atomic_write(Path(output)) as raw, alignment_sink(alignments) as aligned:
            # the temporaries are removed on a stop signal too
            if keep_mode is not None:
                os.chmod(raw.name, keep_mode)  # the renamed file keeps the old one's mode
            sink = io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
            count = translate_into(sink, aligned)
            sink.flush()
            sink.detach()
        return count

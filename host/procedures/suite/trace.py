# SPDX-License-Identifier: BSD-2-Clause
"""TRACE words: how the suite program frames each test (BEGIN with its index, its own
cycle counts, END) and each run (RUN_END) on the SoC twin, read as the file grows."""

from pathlib import Path

from .catalog import index_name

#: TRACE words framing a test and a run (docs/suite.md).
TRACE_BEGIN, TRACE_END, TRACE_RUN_END = 0x5E000000, 0x5EFF0000, 0x5EFFFFFF


def parse_trace(words):
    """TRACE words → the runs they hold, each a list of tests ``{"index", "loaded",
    "counts"}`` in order. Broken framing (a count outside a test, an END that is not
    the open test's, a run that ends inside a test, words after the last RUN_END) is
    a :class:`ValueError` naming it: the counts are then not trusted."""
    runs, run, cur = [], [], None
    for w in words:
        if w == TRACE_RUN_END:
            if cur is not None:
                raise ValueError(f"the run ended inside test {cur['index']}")
            runs.append(run)
            run = []
        elif w & 0xFFFF0000 == TRACE_END:
            if cur is None or cur["index"] != w & 0xFFFF:
                raise ValueError(f"END of test {w & 0xFFFF} without its BEGIN")
            run.append(cur)
            cur = None
        elif w & 0xFF000000 == TRACE_BEGIN:
            if cur is not None:
                raise ValueError(f"BEGIN of test {w & 0xFFFF} inside test {cur['index']}")
            cur = {"index": w & 0xFFFF, "loaded": bool(w >> 16 & 1), "counts": []}
        elif cur is None:
            raise ValueError(f"count {w} outside a test")
        else:
            cur["counts"].append(int(w))
    if cur is not None or run:
        raise ValueError("the trace ends inside a run")
    return runs


class _Trace:
    """The TRACE file of the SoC twin (or None), read as it grows: the words of this
    run, after those of earlier runs in a long session."""

    def __init__(self, path):
        self.path = None if path is None else Path(path)
        self.offset, self.rest, self.words = 0, "", []
        self.before = len(self.read())
        self._begins, self._end, self._scanned = [], None, self.before

    def read(self):
        """Every word so far (the file's new lines appended)."""
        if self.path is None or not self.path.exists():
            return self.words
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        self.offset += len(data)
        lines = (self.rest + data.decode(errors="replace")).split("\n")
        self.rest = lines.pop()             # a line still being written
        for line in lines:
            try:
                self.words.append(int(line) & 0xFFFFFFFF)
            except ValueError:
                pass
        return self.words

    def _scan(self):
        words = self.read()
        while self._end is None and self._scanned < len(words):
            w = words[self._scanned]
            if w == TRACE_RUN_END:
                self._end = self._scanned + 1
            elif _is_begin(w):
                self._begins.append(w & 0xFFFF)
            self._scanned += 1
        return words

    def run(self):
        """This run's words so far (up to its end-of-run word: a go pulse during the
        run starts another one after it)."""
        words = self._scan()
        return words[self.before:self._end if self._end is not None else len(words)]

    def begins(self):
        """The test index of each BEGIN word of this run so far."""
        self._scan()
        return self._begins

    def ended(self):
        """The run's end-of-run word is in."""
        self._scan()
        return self._end is not None

    def tests(self):
        """This run's tests (:func:`parse_trace`; None without a TRACE file) and the
        error that made them untrusted (or None)."""
        if self.path is None:
            return None, None
        try:
            runs = parse_trace(self.run())
        except ValueError as e:
            return [], str(e)
        return (runs[0] if runs else []), None


def _is_begin(w):
    return w & 0xFF000000 == TRACE_BEGIN and w & 0xFFFF0000 != TRACE_END


def _describe_word(w, begins):
    """A TRACE word as the stall report shows it."""
    if w == TRACE_RUN_END:
        return "0x5EFFFFFF (end of the run)"
    name = index_name(w & 0xFFFF)
    which = name or f"test {w & 0xFFFF}, which the suite does not have"
    if w & 0xFFFF0000 == TRACE_END:
        return f"0x{w:08X} (END of {which})"
    if _is_begin(w):
        return f"0x{w:08X} (BEGIN of {which})"
    return f"{w} (a count of {index_name(begins[-1]) if begins else 'no test'})"

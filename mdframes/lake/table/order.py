"""Sorting Arrow tables fast, in the order :meth:`mdframes.lake.sync.modes.Mode.sort_keys` gives.

Most reads come back already ordered (files hold disjoint symbol ranges and are written
sorted); the rest are sorted here, by packing the keys into one integer where they fit.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._threads import threads

__all__ = ["arrange", "either"]


def arrange(
    table: pa.Table,
    keys: list[str],
    drop: np.ndarray | None = None,
    *,
    latest: Callable[[], np.ndarray] | None = None,
    columns: list[str] | None = None,
) -> pa.Table:
    """``table`` in ``keys`` order (ascending, nulls last, ties stable); a table already in
    that order is returned as it is. ``drop``: positions of rows left out, in the same
    gather (a read's older versions: not copied out of every column first). ``latest``:
    only each record's latest version is kept, where the keys end with the version and
    the keys before it tell records apart (a record's identity, then ``_n``): of rows
    equal on all keys but the last, the last in order. The sort tells them so when it
    packs every key into its integers (no row hashed, no identity compared again);
    otherwise ``latest()`` gives the positions of the rows to leave out. ``columns``: the
    columns returned (None: all; the gather copies only these). Text read as its
    dictionary comes back decoded where the rows are gathered."""
    if drop is not None and len(drop) == 0:
        drop = None
    if columns is not None:
        columns = [c for c in columns if c in table.column_names]
    if drop is None and latest is None and (table.num_rows < 2 or not keys):
        return table if columns is None else table.select(columns)
    told: Any = False  # (order, first key's ranks) where the keys pack into integers
    if latest is None and drop is None:  # every version (history): keys packed as below
        told = _packed_order(table, keys)
    elif latest is not None and table.num_rows and keys:
        told = _latest_in_order(table, keys, drop)
    if told is not False:
        order, first = told
        out = table if columns is None else table.select(columns)
        made = {keys[0]: first} if first is not None else {}
        return out if order is None else _gathered(out, order, made)
    if latest is not None:
        drop = latest() if drop is None else either(drop, latest())
        if len(drop) == 0:
            drop = None
        if drop is None and (table.num_rows < 2 or not keys):
            return table if columns is None else table.select(columns)
    if table.num_rows and table.column(0).num_chunks > 1:
        # Rows of many row groups come as as many chunks: one pass joins them, where each
        # key's ranks and the gather of every column would walk them (most of a short
        # read's sort).
        table = _combined(table)
    rows = None
    if drop is not None:
        kept = np.ones(table.num_rows, dtype=bool)
        kept[drop] = False
        rows = np.flatnonzero(kept)
    order = _order(table, keys, rows) if keys else rows
    if columns is not None:
        table = table.select(columns)
    return table if order is None else _gathered(table, order)


def either(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The positions in ``a`` or ``b`` (each ascending, no repeats), ascending: the two runs
    merged by a stable sort (``np.union1d`` hashes every value: ~0.6 ms for a read's 10k
    rows left out before its windows)."""
    if not len(a) or not len(b):
        return b if not len(a) else a
    both = np.concatenate([a, b])
    both.sort(kind="stable")
    return both[np.concatenate([[True], both[1:] != both[:-1]])]


def _packed_order(
    table: pa.Table, keys: list[str]
) -> tuple[np.ndarray | None, Callable[[], pa.Array] | None] | Literal[False]:
    """The positions of every row in ``keys`` order (None: in order already) where all
    ``keys`` pack into one integer (:func:`_packed_chunks`: no join of the chunks, no
    cast), and what makes the first key's column in that order (as
    :func:`_latest_in_order`); False where they do not pack."""
    packed, widths, values = _packed_chunks(table, keys)
    if packed is None or len(widths) != len(keys):
        return False
    if bool(np.all(packed[1:] >= packed[:-1])):
        return None, None
    order = np.argsort(packed, kind="stable")
    first = None
    if values is not None:
        first = functools.partial(_by_rank, values, packed[order], None, sum(widths[1:]))
    return order, first


def _latest_in_order(
    table: pa.Table, keys: list[str], drop: np.ndarray | None
) -> tuple[np.ndarray | None, Callable[[], pa.Array] | None] | Literal[False]:
    """The positions of the rows kept by :func:`arrange` with ``latest``, in order (None:
    every row, in order already), where all ``keys`` pack into one integer, and what
    makes the first key's column in that order when it is text read as its dictionary
    (its values by rank, looked up by each row's rank in the sorted keys: a symbol's rows
    side by side read a few values, where a gather and a decoding would read the codes
    and the text of every row); False where the keys do not pack (the caller asks which
    rows to leave out, and sorts as without ``latest``)."""
    packed, widths, values = _packed_chunks(table, keys)
    if packed is None or len(widths) != len(keys):
        return False
    n = table.num_rows
    ascending = bool(np.all(packed[1:] >= packed[:-1]))
    order = None if ascending else np.argsort(packed, kind="stable")
    # Rows equal on every key but the last (the version) are versions of one record: all
    # but the last of each run are older ones. (The keys, shifted in place: a new array
    # costs more, its first touch, than the shift.)
    record = packed if order is None else packed[order]
    np.right_shift(record, widths[-1], out=record)
    older = np.flatnonzero(record[1:] == record[:-1])
    kept = None  # places in the sorted order kept (None: all)
    if drop is not None or len(older):
        kept = np.ones(n, dtype=bool)
        kept[older] = False
        if drop is not None:
            left = np.zeros(n, dtype=bool)
            left[drop] = True
            kept &= ~(left if order is None else left[order])
    if order is None:
        return (None if kept is None else np.flatnonzero(kept)), None
    first = None
    if values is not None:
        shift = sum(widths[1:-1])
        first = functools.partial(_by_rank, values, record, kept, shift)
    return (order if kept is None else order[kept]), first


def _by_rank(values: pa.Array, keys: np.ndarray, kept: np.ndarray | None, shift: int) -> pa.Array:
    """``values`` (distinct, by rank) at the ranks in the sorted ``keys`` (those ``kept``;
    None: all) shifted right by ``shift``; the rank one past them: null."""
    ranks = (keys if kept is None else keys[kept]) >> shift
    missing = ranks == len(values)
    at = pa.array(ranks, mask=missing) if missing.any() else pa.array(ranks)
    return values.take(at)


def _gathered(
    table: pa.Table, order: np.ndarray, made: dict[str, Callable[[], pa.Array]] | None = None
) -> pa.Table:
    """The rows of ``table`` at ``order``, text read as its dictionary decoded: each column
    gathered from its chunks (no join of every column first, a copy of the whole table;
    a gather of text read as its dictionary unifies its chunks' few distinct values, and
    its decoding then reads a small dictionary), the columns in threads (a gather and a
    decoding release the GIL: a whole table's are most of its sort). ``made``: columns
    made by a function of their own instead, in the same threads."""
    at = pa.array(order)
    made = made or {}

    def gather(column: pa.ChunkedArray) -> pa.ChunkedArray:
        if (
            column.num_chunks > 1
            and pa.types.is_dictionary(column.type)
            and _words(column) > len(column)
        ):
            column = pa.chunked_array([_joined_dictionary(column)])  # else hashed whole
        out = column.take(at)
        return out.cast(out.type.value_type) if pa.types.is_dictionary(out.type) else out

    tasks = [
        made[name] if name in made else functools.partial(gather, table[name])
        for name in table.column_names
    ]
    count = min(threads(), len(tasks))
    if count < 2 or len(order) < _THREADED_ROWS:
        arrays = [task() for task in tasks]
    else:
        import contextvars
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(count) as pool:
            runs = [pool.submit(contextvars.copy_context().run, task) for task in tasks]
            arrays = [run.result() for run in runs]
    return pa.Table.from_arrays(arrays, names=table.column_names)


# Rows from which a gather's columns are gathered in threads: a 1.5M-row read's gather and
# decoding take ~60 ms CPU; a panel chunk's 100k-150k rows ~6 ms, where threads cost a few
# ms more CPU (load 9: 53 -> 58 ms for 200 symbols of put-call ratios) and a panel reads
# its datasets in threads of their own already.
_THREADED_ROWS = 400_000


def _order(table: pa.Table, keys: list[str], rows: np.ndarray | None = None) -> np.ndarray | None:
    """The positions of the rows (``rows``, ascending; None: all) in ``keys`` order; None
    when all rows are asked and in it already."""
    packed, widths, _ = _packed_chunks(table, keys)
    used = len(widths)
    if packed is None:
        # Each key's ranks, sorted together (stable). Not Arrow's sort: it refuses text read
        # as its dictionary (a read's text stays coded until rows are ordered).
        ranks = [_rank(_whole(table[k])) for k in reversed(keys)]
        if rows is not None:
            ranks = [r[rows] for r in ranks]
        return _positions(np.lexsort(ranks), rows)
    if rows is not None:
        packed = packed[rows]
    rest = keys[used:]
    if bool(np.all(packed[1:] > packed[:-1])) or (
        not rest and bool(np.all(packed[1:] >= packed[:-1]))
    ):
        return rows
    # A stable sort of the packed keys: a merge of the runs the files were written in
    # (timsort finds them), not a sort from scratch.
    order = np.argsort(packed, kind="stable")
    if rest:
        _break_ties(table, rest, packed, order, rows)
    return _positions(order, rows)


def _positions(order: np.ndarray, rows: np.ndarray | None) -> np.ndarray | None:
    """``order`` (places among ``rows``) as positions in the table; None when every row is
    asked and in order already."""
    if rows is not None:
        return rows[order]
    return None if bool(np.all(order[1:] > order[:-1])) else order


def _break_ties(
    table: pa.Table,
    rest: list[str],
    packed: np.ndarray,
    order: np.ndarray,
    rows: np.ndarray | None = None,
) -> None:
    """``order`` (by ``packed``, stable) refined in place by the keys ``rest`` among the
    rows whose packed keys are equal, ranked on those rows alone (a record's id, text of
    about as many values as rows, is ranked on the few rows sharing a symbol and day, not
    over every row group's dictionary). ``order`` and ``packed`` are of ``rows`` (None:
    all)."""
    ranked = packed[order]
    tie = ranked[1:] == ranked[:-1]
    if not tie.any():
        return
    member = np.zeros(len(order), dtype=bool)
    member[1:] |= tie
    member[:-1] |= tie
    at = np.flatnonzero(member)  # places in ``order`` of rows in runs of equal keys
    starts = np.ones(len(at), dtype=bool)
    starts[1:] = ~tie[at[1:] - 1]
    runs = np.cumsum(starts)
    places = order[at]
    tied = table.select(rest).take(pa.array(places if rows is None else rows[places]))
    ranks = []
    for name in reversed(rest):
        col = _whole(tied[name])
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)  # these rows' values, not the dictionary
        ranks.append(_rank(col))
    order[at] = places[np.lexsort([*ranks, runs])]


def _packed_chunks(
    table: pa.Table, keys: list[str]
) -> tuple[np.ndarray | None, list[int], pa.Array | None]:
    """The leading keys packed into one 63-bit integer per row (symbol rank, day, version,
    ...), in the same order as the keys themselves (sorting those integers is several times
    faster than Arrow's sort); each packed key's width in bits (the last key's in the
    lowest bits); and the first key's distinct values by rank when it is text read as its
    dictionary. Keys are packed up to the first key after the first whose dictionaries hold
    more than a quarter as many values as the rows (a record id: ranking it would sort
    every row group's dictionary; the keys from there break the ties, :func:`_break_ties`)
    or that does not fit; none (None) when the first does not fit. Made chunk by chunk: a
    row group's codes looked up in the ranks of every row group's dictionary, ranked once;
    numbers and times read where they are stored, with no cast, no null filled and no join
    of the chunks first."""
    n = table.num_rows
    packed = np.empty(n, dtype=np.int64)
    part = np.empty(n, dtype=np.int64)
    bits = 0
    widths: list[int] = []
    values = None
    for name in keys:
        column = table[name]
        if widths and pa.types.is_dictionary(column.type) and _words(column) * 4 > n:
            break  # ranking it would sort more values than the rows hold
        if pa.types.is_floating(column.type) and bits + (n - 1).bit_length() > 62:
            break
        width: int | None
        if not widths and _is_coded_text(column.type):
            width, values = _coded_numbers(column, packed)
        else:
            width = _key_numbers(column, part if widths else packed)
        if width is None or bits + width > 62:
            break
        if widths:
            np.left_shift(packed, width, out=packed)
            np.bitwise_or(packed, part, out=packed)
        bits += width
        widths.append(width)
    return (packed if widths else None), widths, values


def _is_coded_text(kind: pa.DataType) -> bool:
    return pa.types.is_dictionary(kind) and pa.types.is_string(kind.value_type)


def _words(column: pa.ChunkedArray) -> int:
    """The values of a dictionary column's chunks' dictionaries, each counted once."""
    return sum(len(d) for d in _dictionaries(column).values())


def _dictionaries(column: pa.ChunkedArray) -> dict[tuple[int, ...], pa.Array]:
    """A dictionary column's distinct dictionaries (by their buffers: a row group's chunks
    share one), in the order of the chunks."""
    out: dict[tuple[int, ...], pa.Array] = {}
    for chunk in column.chunks:
        out.setdefault(dictionary_key(chunk.dictionary), chunk.dictionary)
    return out


def dictionary_key(dictionary: pa.Array) -> tuple[int, ...]:
    """What tells a chunk's dictionary from another's (chunks of one row group share it)."""
    return (
        *(b.address if b is not None else 0 for b in dictionary.buffers()),
        dictionary.offset,
        len(dictionary),
    )


def _key_numbers(column: pa.ChunkedArray, out: np.ndarray) -> int | None:
    """One key's values as integers from 0, in the key's order (nulls last, equal values
    equal), written in ``out``; their width in bits, None when more than 62."""
    kind = column.type
    if _is_coded_text(kind):
        return _coded_numbers(column, out)[0]
    if _stored_as_integers(kind):
        return _integer_numbers(column, out)
    values = _rank(_whole(column))
    if values.dtype.kind == "f":
        _, values = np.unique(values, return_inverse=True)  # NaN ranks last
    low = int(values.min())
    width = max((int(values.max()) - low).bit_length(), 1)
    if width > 62:
        return None
    np.subtract(values, low, out=out, casting="unsafe")
    return width


def _stored_as_integers(kind: pa.DataType) -> bool:
    return (
        (pa.types.is_integer(kind) and not pa.types.is_uint64(kind))
        or pa.types.is_date(kind)
        or pa.types.is_timestamp(kind)
        or pa.types.is_time(kind)
        or pa.types.is_duration(kind)
    )


def _coded_numbers(column: pa.ChunkedArray, out: np.ndarray) -> tuple[int, pa.Array]:
    """:func:`_key_numbers` of text read as its dictionary: every chunk's dictionary
    ranked together once, each row's code looked up in its own's ranks; and the distinct
    values by rank."""
    dictionaries = _dictionaries(column)
    values = list(dictionaries.values())
    joined = pa.concat_arrays(values) if values else pa.array([], column.type.value_type)
    rank = _dense(joined)
    where = np.zeros(int(rank[-1]), dtype=np.int64)  # a place of each rank's value
    where[rank[:-1]] = np.arange(len(joined))
    by_rank = joined.take(pa.array(where))
    lookups: dict[tuple[int, ...], np.ndarray] = {}
    at = 0
    for dictionary in values:  # each dictionary's ranks, the null's last (code -1)
        ranks = np.empty(len(dictionary) + 1, dtype=np.int64)
        ranks[:-1] = rank[at : at + len(dictionary)]
        ranks[-1] = rank[-1]
        lookups[dictionary_key(dictionary)] = ranks
        at += len(dictionary)
    start = 0
    nulls = False
    for chunk in column.chunks:
        if not len(chunk):
            continue
        indices = chunk.indices
        if chunk.null_count:
            nulls = True
            codes = pc.fill_null(indices, -1).to_numpy()
        else:
            codes = indices.to_numpy()
        lookup = lookups[dictionary_key(chunk.dictionary)]
        np.take(lookup, codes, out=out[start : start + len(chunk)], mode="wrap")  # -1: last
        start += len(chunk)
    highest = int(rank[-1]) if nulls else int(rank[-1]) - 1
    return max(highest.bit_length(), 1), by_rank


def _integer_numbers(column: pa.ChunkedArray, out: np.ndarray) -> int | None:
    """:func:`_key_numbers` of integers, dates and times: each chunk's stored integers
    less the least, a null one more than the greatest."""
    parts = []
    low = high = None
    for chunk in column.chunks:
        if not len(chunk):
            continue
        stored = _stored_integers(chunk)
        valid = None
        present = stored
        if chunk.null_count:
            valid = np.asarray(chunk.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
            present = stored[valid]
        if len(present):
            lo, hi = int(present.min()), int(present.max())
            low = lo if low is None else min(low, lo)
            high = hi if high is None else max(high, hi)
        parts.append((stored, valid))
    if low is None or high is None:
        low = high = 0  # every value null
    null = high - low + 1
    nulls = any(valid is not None for _, valid in parts)
    width = max((null if nulls else null - 1).bit_length(), 1)
    if width > 62:
        return None
    start = 0
    base = np.int64(low)
    for stored, valid in parts:
        place = out[start : start + len(stored)]
        np.subtract(stored, base, out=place, casting="unsafe")
        if valid is not None:
            place[~valid] = null
        start += len(stored)
    return width


def _stored_integers(chunk: pa.Array) -> np.ndarray:
    """A chunk's values as stored (integers: days, time units), read in place (a null's
    value is whatever is stored)."""
    size = chunk.type.bit_width // 8
    signed = not pa.types.is_unsigned_integer(chunk.type)
    dtype = np.dtype(f"{'i' if signed else 'u'}{size}")
    data = chunk.buffers()[1]
    return np.frombuffer(data, dtype=dtype, count=len(chunk), offset=chunk.offset * size)


def _combined(table: pa.Table) -> pa.Table:
    """``table`` with each column in one chunk. Text read as its dictionary comes in chunks
    that share their row group's dictionary (a filter or a cut leaves many): it is joined
    by appending each row group's dictionary once and shifting the codes. Arrow's
    ``combine_chunks`` unifies the dictionaries of every chunk by hashing each value, most
    of a short read's sort (8k rows in 58 chunks: 250k values hashed), where the chunks'
    dictionaries hold more values than the rows. The joined
    dictionary may hold a value twice; ranks and the decoding to text do not mind."""
    arrays = [
        _joined_dictionary(c)
        if c.num_chunks > 1
        and pa.types.is_dictionary(c.type)
        and sum(len(k.dictionary) for k in c.chunks) > len(c)  # else hashing costs less
        else _whole(c)
        for c in table.columns
    ]
    return pa.Table.from_arrays(arrays, schema=table.schema)


def _joined_dictionary(column: pa.ChunkedArray) -> pa.Array:
    first: dict[tuple[int, ...], int] = {}  # a dictionary (by its buffers) -> its first code
    values: list[pa.Array] = []
    codes: list[pa.Array] = []
    size = 0
    for chunk in column.chunks:
        dictionary = chunk.dictionary
        key = dictionary_key(dictionary)
        at = first.get(key)
        if at is None:
            at = first[key] = size
            values.append(dictionary)
            size += len(dictionary)
        indices = chunk.indices
        codes.append(pc.add(indices, pa.scalar(at, indices.type)) if at else indices)
    if size > np.iinfo(np.int32).max or column.type.index_type != pa.int32():
        return column.combine_chunks()
    return pa.DictionaryArray.from_arrays(pa.concat_arrays(codes), pa.concat_arrays(values))


def _whole(column: pa.ChunkedArray) -> pa.Array:
    return column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)


def _rank(col: pa.Array) -> np.ndarray:
    t = col.type
    if pa.types.is_dictionary(t) and pa.types.is_string(t.value_type):
        # Text read as its dictionary: the values ranked, each row's code looked up.
        return _dense(col.dictionary)[pc.fill_null(col.indices, -1).to_numpy()]
    if pa.types.is_dictionary(t):
        col, t = col.cast(t.value_type), t.value_type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return _text_rank(col)
    if pa.types.is_boolean(t):
        encoded = pc.dictionary_encode(col)
        order = np.asarray(pc.sort_indices(encoded.dictionary))
        rank = np.empty(len(order) + 1, dtype=np.int64)
        rank[order] = np.arange(len(order))
        rank[-1] = len(order)  # nulls last
        codes = pc.fill_null(encoded.indices, len(order)).to_numpy()
        return rank[codes]
    if pa.types.is_floating(t):
        return col.to_numpy(zero_copy_only=False)  # NaN (null) sorts last
    if pa.types.is_temporal(t) or pa.types.is_integer(t):
        width = pa.int32() if pa.types.is_date32(t) else pa.int64()
        ints = col.cast(width, safe=False) if not pa.types.is_integer(t) else col.cast(pa.int64())
        return pc.fill_null(ints.cast(pa.int64()), np.iinfo(np.int64).max).to_numpy()
    return np.asarray(
        pc.rank(col, sort_keys="ascending", null_placement="at_end", tiebreaker="dense")
    )


def _text_rank(col: pa.Array) -> np.ndarray:
    """Ranks of text values (nulls last). Text in a read mostly comes in long runs (a
    symbol's rows together in each file): the runs' first values are ranked, not every
    row hashed."""
    n = len(col)
    if n < 2:
        return np.zeros(n, dtype=np.int64)
    changed = pc.fill_null(pc.not_equal(col.slice(1), col.slice(0, n - 1)), True)
    changed = pc.or_(changed, pc.xor(pc.is_null(col.slice(1)), pc.is_null(col.slice(0, n - 1))))
    starts = np.concatenate([[0], np.flatnonzero(changed.to_numpy(zero_copy_only=False)) + 1])
    if len(starts) * 4 > n:  # short runs: hash every row
        encoded = pc.dictionary_encode(col)
        return _dense(encoded.dictionary)[pc.fill_null(encoded.indices, -1).to_numpy()]
    lengths = np.diff(np.concatenate([starts, [n]]))
    return np.repeat(_dense(col.take(pa.array(starts)))[:-1], lengths)


def _dense(values: pa.Array) -> np.ndarray:
    """Dense ranks of ``values`` (equal values equal ranks, nulls last), one more entry at
    the end for a null index of -1. One rank kernel: a sort, a gather and six comparisons of
    the sorted values cost twice as much (a sort ranks each text key's dictionary)."""
    m = len(values)
    if m == 0:  # no value (text read where every row is null): the null index's rank
        return np.zeros(1, dtype=np.int64)
    rank = np.empty(m + 1, dtype=np.int64)
    rank[:m] = np.asarray(pc.rank(values, sort_keys="ascending", tiebreaker="dense"))
    rank[:m] -= 1
    rank[m] = rank[:m].max() + 1
    return rank


def time_sliced(table: pa.Table, time: str, block: int, slices: int) -> pa.Table:
    """``table`` (sorted by symbol, then ``time``, ...) laid out in time slices: cut into
    blocks of ``block`` consecutive rows, each block's rows stored slice by slice, ``slices``
    ranges of ``time`` of ``block // slices`` rows each (the last block's as many as it
    fills), each slice still sorted by symbol, time, .... Row groups of ``block // slices``
    rows then hold one block's symbols over one slice of time, so their statistics prune by
    symbol and by time. One symbol's rows still come in order, slice after slice (a slice
    ends where the block's rows in (time, stored order) reach its size: of two rows of a
    symbol, the earlier is never in a later slice), and the rows of a block read whole are
    put back in order by :func:`arrange`. A write of at most one slice stays as sorted."""
    n = table.num_rows
    per_slice = max(block // max(slices, 1), 1)
    if n <= per_slice or slices < 2 or time not in table.column_names:
        return table
    position = np.arange(n)
    block_of = position // (per_slice * slices)
    times = _rank(_whole(table[time]))  # days or microseconds; nulls last (the largest)
    by_time = np.lexsort((position, times, block_of))  # blocks stay where they are
    slice_of = np.empty(n, dtype=np.int64)
    slice_of[by_time] = (position % (per_slice * slices)) // per_slice
    key = block_of * slices + slice_of
    return table.take(pa.array(np.argsort(key, kind="stable")))

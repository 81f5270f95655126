"""The per-kind tables: every field kind has its dtype, accepted JSON types and caster, every
parameter kind its check; and the fast paths taken through them give what the general paths
give."""

from __future__ import annotations

import re
import typing

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from mdframes import frame, params
from mdframes.kinds import KINDS
from mdframes.registry import REGISTRY, Field, Param


def test_every_field_kind_has_a_caster_and_every_parameter_kind_a_check() -> None:
    field_kinds = set(typing.get_args(typing.get_type_hints(Field)["kind"]))
    assert field_kinds == set(KINDS) == set(frame.CASTERS)
    assert all(KINDS[k].accepts for k in field_kinds - {"obj"})  # only "obj" takes anything
    param_kinds = set(typing.get_args(typing.get_type_hints(Param)["kind"]))
    assert param_kinds == set(params._CHECK_PARAM)
    used = {f.kind for ds in REGISTRY.values() for f in ds.all_fields}
    assert used <= field_kinds


INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(INT64, st.none()), max_size=30))
def test_integers_fast_path_equals_pandas(values: list[int | None]) -> None:
    # Without nulls numpy reads the integers; the result must be what pd.array gives.
    got = frame._integers(values)
    want = pd.array(values, dtype="Int64")
    assert got.dtype == want.dtype and got.equals(want)


_OLD_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
DATE_TEXT = st.one_of(
    st.dates().map(lambda d: d.isoformat()),
    st.text(alphabet="0123456789-T:Z x\n", min_size=0, max_size=12),
    st.tuples(st.dates(), st.dates()).map(lambda d: f"{d[0]}\n{d[1]}"),
)


@settings(max_examples=300, deadline=None)
@given(st.sets(DATE_TEXT, max_size=8))
def test_one_scan_of_all_dates_equals_a_match_per_value(distinct: set[str]) -> None:
    # "$" also matches before a final newline: a value numpy never read as a date either.
    old = all((m := _OLD_DATE.match(v)) is not None and m.end() == len(v) for v in distinct)
    assert frame._all_iso_dates(distinct) == old

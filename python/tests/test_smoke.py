import datafusion_anonymity as anon
from conftest import rows


def test_module_loads_and_registers(ctx):
    # k_anonymity(id) over 3 rows of 2 persons: 2 distinct persons
    ctx.from_pydict({"id": [1, 1, 2], "g": ["a", "a", "a"]}, name="t")
    assert rows(ctx, "SELECT g, k_anonymity(id) FROM t GROUP BY g") == [("a", 2)]
    assert "k_anonymity" in anon._internal.function_names()

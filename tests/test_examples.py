"""Every example of the DirectML pages, exactly (errata applied: see dmlgpu/layer1/examples.py)."""
import numpy as np
import pytest

from dmlgpu.layer1 import examples
from dmlgpu import reference
import dmlgpu


@pytest.mark.parametrize("example", examples.EXAMPLES, ids=lambda e: f"{e.operator}:{e.title.split('.')[0]}")
def test_page_example_layer1(example, device):
    out = examples.run(example, device)
    assert out.shape == example.expected.shape
    assert out.tobytes() == example.expected.tobytes()


def test_demo_runs_and_reports_success(device, capsys):
    from dmlgpu import demo
    assert demo.main(device) == 0
    assert "all results correct" in capsys.readouterr().out


def test_scatter_duplicates_last_update_wins(device):
    data = np.arange(10, dtype=np.float16)
    idx = (np.arange(100_000) % 10).reshape(-1, 1)
    upd = (np.arange(100_000) % 2048).astype(np.float16)
    out = dmlgpu.scatter_nd(data, idx, upd, device=device)
    assert out.tobytes() == reference.scatter_nd(data, idx, upd).tobytes()

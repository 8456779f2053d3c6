"""A `dse grid` checkpoint resumes only the run that wrote it; a damaged file is refused in one line."""
from __future__ import annotations

import pytest

from dse.errors import ConfigError
from dse.search.grid.stream import stream_grid
from dse.search.space.objectives import objectives_from_dict
from dse.search.space.space_file import space_from_dict
from tests.search.grid.test_grid import TWO
from tests.search.grid.test_stream import BASE, SPACE


def test_a_checkpoint_of_another_run_is_refused(tmp_path):
    space, objset = space_from_dict(SPACE), objectives_from_dict(TWO)
    ck = tmp_path / "grid.ckpt.npz"
    with pytest.raises(KeyboardInterrupt):
        stream_grid(space, objset, BASE, chunk=1000, checkpoint=str(ck),
                    progress=lambda n: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(ConfigError, match="another space, objectives"):
        stream_grid(space, objset, {"model": "glm-5.2"}, chunk=1000, checkpoint=str(ck))
    ck.write_bytes(b"not a zip")
    with pytest.raises(ConfigError, match="not a dse grid checkpoint"):
        stream_grid(space, objset, BASE, chunk=1000, checkpoint=str(ck))

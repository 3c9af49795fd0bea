"""A binding handle attached to Redis (libjbsync): jobs Redis decides are
claimed through Redis, against taskflow's own Redis board as the peer."""

import json
import os
import shutil
import subprocess
import time

import pytest

import jobboard

SYNC_LIB = os.environ.get("JOBBOARD_SYNC_LIBRARY")
CLI = os.environ.get("JOBBOARD_CLI")
pytestmark = pytest.mark.skipif(
    not SYNC_LIB or not os.path.exists(SYNC_LIB) or not CLI,
    reason="jobboard was built without hiredis (no libjbsync)")


@pytest.fixture
def redis(tmp_path):
    if shutil.which("redis-server") is None:
        pytest.fail("redis-server is not installed (apt-get install "
                    "redis-server)")
    sock = str(tmp_path / "redis.sock")
    p = subprocess.Popen(["redis-server", "--port", "0", "--unixsocket",
                          sock, "--unixsocketperm", "700", "--save", "",
                          "--appendonly", "no", "--dir", str(tmp_path)],
                         stdout=subprocess.DEVNULL)
    for _ in range(200):
        if os.path.exists(sock):
            break
        time.sleep(0.02)
    else:
        p.kill()
        pytest.fail("redis-server did not start")
    yield sock
    p.terminate()
    p.wait(10)


def tf_board(sock, ns, name):
    from taskflow.jobs.backends import impl_redis
    b = impl_redis.RedisJobBoard(name, {"unix_socket_path": sock,
                                        "namespace": ns})
    b.connect()
    return b


def wait_for(pred, timeout=15):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return False


def test_redis_decides(redis, tmp_path):
    url = "unix://" + redis
    path = str(tmp_path / "board")
    b = jobboard.Board(path, create=True, redis=url, namespace="py")
    assert b.synced
    sync = subprocess.Popen([CLI, "sync", "--board", path, "--poll", "0.2"],
                            stderr=subprocess.DEVNULL)
    tf = tf_board(redis, "py", "tf")
    try:
        mine = b.post("posted-here")
        assert wait_for(lambda: b.get(mine).remote)  # published
        theirs = tf.post("posted-by-taskflow")
        assert wait_for(lambda: any(j.uuid == theirs.uuid for j in b))
        # taskflow claims its own job in Redis: our claim is refused with
        # the owner Redis holds, and nothing changes here.
        tf.claim(theirs, "tf-worker")
        with pytest.raises(jobboard.ClaimedError, match="tf-worker"):
            b.claim(theirs.uuid, "py-worker")
        # Ours is claimed through Redis: taskflow sees our owner.
        c = b.claim(mine, "py-worker")
        [tfjob] = [j for j in tf.iterjobs() if j.uuid == mine]
        assert tf.find_owner(tfjob) == "py-worker"
        c.consume()
        assert wait_for(lambda: mine not in
                        [j.uuid for j in tf.iterjobs()])
        tf.consume(theirs, "tf-worker")
        assert wait_for(lambda: b.count() == 0)
        # The board remembers the URL and namespace: redis=True finds them.
        b2 = jobboard.Board(path, redis=True)
        assert b2.synced
        b2.close()
    finally:
        sync.terminate()
        assert sync.wait(20) == 0
        tf.close()
        b.close()


def test_redis_away(redis, tmp_path):
    path = str(tmp_path / "board")
    url = "unix://" + redis
    b = jobboard.Board(path, create=True, redis=url, namespace="away")
    sync = subprocess.Popen([CLI, "sync", "--board", path],
                            stderr=subprocess.DEVNULL)
    try:
        u = b.post("x")
        assert wait_for(lambda: b.get(u).remote)
    finally:
        sync.terminate()
        assert sync.wait(20) == 0
    b.close()
    # Redis is away: the board opens (a local job still works), and the
    # job Redis decides is refused with OfflineError, changing nothing.
    gone = str(tmp_path / "none.sock")
    b = jobboard.Board(path, redis="unix://" + gone, namespace="away")
    assert not b.synced
    with pytest.raises(jobboard.OfflineError) as e:
        b.claim(u, "w")
    assert isinstance(e.value, ConnectionError)
    assert b.state(u) is jobboard.State.UNCLAIMED
    local = b.post("local")
    with pytest.raises(jobboard.InvalidError, match="namespace"):
        jobboard.Board(path, redis=url, namespace="other")
    b.close()
    assert local
    with pytest.raises(jobboard.InvalidError, match="no Redis URL"):
        jobboard.Board(str(tmp_path / "fresh"), create=True, redis=True)


def test_detach(redis, tmp_path):
    """A synced board detached: its published job stays, as a local one;
    refused while a replicator runs, and on a board not synced."""
    path = str(tmp_path / "board")
    url = "unix://" + redis
    b = jobboard.Board(path, create=True, redis=url, namespace="det")
    sync = subprocess.Popen([CLI, "sync", "--board", path],
                            stderr=subprocess.DEVNULL)
    try:
        u = b.post("x")
        assert wait_for(lambda: b.get(u).remote)
        assert wait_for(lambda: json.loads(subprocess.run(
            [CLI, "status", "--board", path, "--json"],
            capture_output=True).stdout)["running"])
        with pytest.raises(jobboard.ClaimedError, match="replicator"):
            b.sync_detach()
    finally:
        sync.terminate()
        assert sync.wait(20) == 0
    r = b.sync_detach()
    assert r["namespace"] == "det" and r["jobs"] == 1
    assert not b.get(u).remote
    assert "detached from " + url + " namespace det" in b.sync_detached()
    with pytest.raises(jobboard.NotFoundError, match="not synced"):
        b.sync_detach()
    c = b.claim(u, "w")
    c.consume()
    b.close()

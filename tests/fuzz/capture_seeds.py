#!/usr/bin/python3
"""tests/fuzz/capture_seeds.py - seeds captured from a live session.

    /usr/bin/python3 tests/fuzz/capture_seeds.py JOBBOARD [OUTDIR]

(OUTDIR defaults to tests/fuzz/corpus.) Needs redis-server and Debian's
python3-taskflow (/usr/bin/python3). Starts a redis-server on a unix socket
in a temporary directory and a recording proxy in front of it; then the
jobboard CLI (binary JOBBOARD) posts, publishes (`jobboard sync`), claims,
is refused, abandons, extends, consumes and trashes through the proxy,
and taskflow's RedisJobBoard posts and claims on the same namespace.
Written:
  redis/cap-*    every chunk the server sent a jobboard connection (the
                 handshake, each script's reply for each outcome, the
                 replicator's pipelines, the resolve reads' EXEC, notices),
                 deduplicated;
  posting/cap-*  every posting listed in Redis at the end: jobboard's own
                 and taskflow's, byte for byte as each wrote it.
The captured files are committed: CI never runs this script.
"""
import hashlib
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

JB = os.path.abspath(sys.argv[1])
OUT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)), 'corpus')
tmp = tempfile.mkdtemp(prefix='jb-capture.')
sock = os.path.join(tmp, 'redis.sock')
proxy_path = os.path.join(tmp, 'proxy.sock')
chunks = {}
lock = threading.Lock()


def pump(src, dst, record):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            if record:
                with lock:
                    chunks.setdefault(hashlib.sha1(data).hexdigest()[:16], data)
            dst.sendall(data)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def proxy():
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(proxy_path)
    srv.listen(64)
    while True:
        c, _ = srv.accept()
        r = socket.socket(socket.AF_UNIX)
        r.connect(sock)
        threading.Thread(target=pump, args=(c, r, False), daemon=True).start()
        threading.Thread(target=pump, args=(r, c, True), daemon=True).start()


def jb(*args, check=False):
    p = subprocess.run([JB, '--board', os.path.join(tmp, 'b')] + list(args),
                       capture_output=True, text=True,
                       env=dict(os.environ, JOBBOARD_REDIS='unix://' + proxy_path,
                                JOBBOARD_NAMESPACE='taskflow'))
    if check and p.returncode != 0:
        sys.exit('capture: jobboard %s: %s' % (' '.join(args), p.stderr))
    return p.stdout.strip()


def listed(r, uuid):
    return r.hexists('taskflow:listings', uuid)


def main():
    import redis
    from taskflow.jobs.backends import impl_redis
    server = subprocess.Popen(['redis-server', '--port', '0', '--unixsocket', sock,
                               '--save', '', '--appendonly', 'no', '--dir', tmp],
                              stdout=subprocess.DEVNULL)
    try:
        r = redis.Redis(unix_socket_path=sock)
        for _ in range(100):
            try:
                r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        threading.Thread(target=proxy, daemon=True).start()
        time.sleep(0.1)
        book = '0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9'
        a = jb('post', 'resize', '--details', '{"store": {"x": 1}, "path": "a.png"}',
               '--priority', 'high', '--book-name', 'my-book', '--book-uuid', book, check=True)
        b = jb('post', 'claimed-before-publication', check=True)
        c = jb('post', 'to-trash', '--priority', 'very_low', check=True)
        d = jb('post', 'résumé', '--details', '{"n": [1, 2.5, true, null, "ü"]}', check=True)
        jb('claim', '--who', 'worker-1', '--lease', '30', b, check=True)
        daemon = subprocess.Popen([JB, '--board', os.path.join(tmp, 'b'), 'sync',
                                   '--redis', 'unix://' + proxy_path, '--poll', '0.2'],
                                  stderr=subprocess.DEVNULL)
        deadline = time.time() + 20
        while time.time() < deadline and not all(listed(r, u) for u in (a, b, c, d)):
            time.sleep(0.1)
        tf = impl_redis.RedisJobBoard('tf', {'unix_socket_path': sock, 'namespace': 'taskflow'})
        tf.connect()
        tj = tf.post('taskflow-job', details={'store': {'y': [1, 2]}, 'flow_uuid': book})
        tf.post('taskflow-plain')
        tf.claim(tj, 'conductor-1')
        time.sleep(1.5)  # the replicator's polls pull taskflow's jobs
        jb('claim', '--who', 'alice', a)             # ok
        jb('claim', '--who', 'bob', a)               # already claimed
        jb('claim', '--who', 'bob', tj.uuid)         # claimed by taskflow
        jb('extend', '--who', 'alice', '--lease', '60', a)
        jb('abandon', '--who', 'bob', a)             # not the owner
        jb('abandon', '--who', 'alice', a)           # ok
        jb('consume', '--who', 'alice', a)           # not claimed
        jb('claim', '--who', 'carol', d)
        jb('consume', '--who', 'carol', d)           # ok
        jb('claim', '--who', 'dave', c)
        jb('trash', '--who', 'dave', c)              # ok
        jb('show', b)
        jb('status')
        time.sleep(1.0)
        listings = r.hgetall('taskflow:listings')
        daemon.terminate()
        daemon.wait(10)
        tf.close()
    finally:
        server.terminate()
        server.wait(10)
    os.makedirs(os.path.join(OUT, 'redis'), exist_ok=True)
    os.makedirs(os.path.join(OUT, 'posting'), exist_ok=True)
    for h, data in sorted(chunks.items()):
        with open(os.path.join(OUT, 'redis', 'cap-' + h), 'wb') as f:
            f.write(data)
    for uuid, posting in sorted(listings.items()):
        name = 'cap-' + hashlib.sha1(posting).hexdigest()[:16]
        with open(os.path.join(OUT, 'posting', name), 'wb') as f:
            f.write(posting)
    print('captured %d reply chunks, %d postings' % (len(chunks), len(listings)))
    subprocess.run(['rm', '-rf', tmp])


if __name__ == '__main__':
    main()

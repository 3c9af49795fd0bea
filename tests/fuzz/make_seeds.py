#!/usr/bin/env python3
"""tests/fuzz/make_seeds.py - write the seed corpus of the fuzz targets.

    python3 tests/fuzz/make_seeds.py [OUTDIR]     (default: tests/fuzz/corpus)

No dependencies: msgpack is encoded by hand here, as taskflow writes it
(smallest widths, str keys; docs/DESIGN-NOTES.md, "Redis keys and
encodings"), so
the seeds are the bytes taskflow and our scripts put in Redis: postings
(taskflow's and jobboard's, with and without book, every priority,
oddities taskflow's reader tolerates), details maps, RESP replies of each
script outcome and of the reads the replicator and the resolve make, JSON
details and --batch lines. Deterministic: running it again rewrites the
same files. Seeds captured from a live board and taskflow are added by
tests/fuzz/capture_seeds.py (needs redis-server and python3-taskflow).
"""
import os
import struct
import sys


def mp(v):
    """msgpack of a Python value, smallest widths, as oslo/cmsgpack write."""
    if v is None:
        return b'\xc0'
    if v is True:
        return b'\xc3'
    if v is False:
        return b'\xc2'
    if isinstance(v, Ext):
        n = len(v.data)
        if n in (1, 2, 4, 8, 16):
            return bytes([{1: 0xd4, 2: 0xd5, 4: 0xd6, 8: 0xd7, 16: 0xd8}[n], v.type & 0xff]) + v.data
        if n < 256:
            return bytes([0xc7, n, v.type & 0xff]) + v.data
        return b'\xc8' + struct.pack('>H', n) + bytes([v.type & 0xff]) + v.data
    if isinstance(v, int):
        if 0 <= v < 128:
            return bytes([v])
        if -32 <= v < 0:
            return struct.pack('b', v)
        if v >= 0:
            for tag, fmt, lim in ((0xcc, '>B', 1 << 8), (0xcd, '>H', 1 << 16),
                                  (0xce, '>I', 1 << 32), (0xcf, '>Q', 1 << 64)):
                if v < lim:
                    return bytes([tag]) + struct.pack(fmt, v)
        for tag, fmt, lim in ((0xd0, '>b', 1 << 7), (0xd1, '>h', 1 << 15),
                              (0xd2, '>i', 1 << 31), (0xd3, '>q', 1 << 63)):
            if -lim <= v:
                return bytes([tag]) + struct.pack(fmt, v)
    if isinstance(v, float):
        return b'\xcb' + struct.pack('>d', v)
    if isinstance(v, str):
        b = v.encode()
        n = len(b)
        if n < 32:
            return bytes([0xa0 | n]) + b
        if n < 256:
            return bytes([0xd9, n]) + b
        return b'\xda' + struct.pack('>H', n) + b
    if isinstance(v, bytes):
        return bytes([0xc4, len(v)]) + v
    if isinstance(v, (list, tuple)):
        n = len(v)
        head = bytes([0x90 | n]) if n < 16 else b'\xdc' + struct.pack('>H', n)
        return head + b''.join(mp(x) for x in v)
    if isinstance(v, dict):
        n = len(v)
        head = bytes([0x80 | n]) if n < 16 else b'\xde' + struct.pack('>H', n)
        return head + b''.join(mp(k) + mp(x) for k, x in v.items())
    raise TypeError(v)


class Ext:
    def __init__(self, type_, data):
        self.type, self.data = type_, data


def dt(y, mo, d, h=0, mi=0, s=0, us=0, order=None, extra=None):
    f = {'day': d, 'month': mo, 'year': y, 'hour': h, 'minute': mi,
         'second': s, 'microsecond': us}
    if order:
        f = {k: f[k] for k in order}
    if extra:
        f.update(extra)
    return Ext(1, mp(f))


U1 = '3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5f'
U2 = '00000000-0000-4000-8000-000000000001'
BOOK = '0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9'


def posting(uuid=U1, name='demo-job', prio='HIGH', created=None,
            details=None, book=None, seq=42, extra=None):
    p = {'uuid': uuid, 'name': name, 'priority': prio,
         'created_on': created or dt(2024, 1, 2, 3, 4, 5, 6),
         'details': {} if details is None else details}
    if book:
        p['book'] = book
    if extra:
        p.update(extra)
    p['sequence'] = seq
    return p


def postings():
    """(file name, posting bytes)."""
    yield 'taskflow-full', mp(posting(details={'store': {'x': 1}},
                                      book={'name': 'my-book', 'uuid': BOOK}))
    yield 'taskflow-smallest', mp(posting(uuid=U2, name='m', prio='NORMAL',
                                          created=dt(2024, 1, 2, 3, 4, 5, 0), seq=43))
    for p in ('VERY_HIGH', 'LOW', 'VERY_LOW', 'high', 'Normal'):
        yield 'priority-' + p, mp(posting(prio=p, seq=7))
    yield 'no-priority', mp({k: v for k, v in posting().items() if k != 'priority'})
    yield 'seq-uint64', mp(posting(seq=1 << 40))
    yield 'seq-uint8', mp(posting(seq=200))
    yield 'seq-uint16', mp(posting(seq=60000))
    yield 'seq-uint32', mp(posting(seq=70000))
    yield 'name-str16', mp(posting(name='n' * 300))
    yield 'name-utf8', mp(posting(name='résumé-ジョブ'))
    yield 'details-nil', mp({k: (None if k == 'details' else v)
                             for k, v in posting().items()})
    yield 'details-rich', mp(posting(details={
        'store': {'a': [1, -2, 3.5, True, False, None, 'x' * 40]},
        'flow_uuid': U2, 'bin': b'\x00\xff', 'uuid-ext': Ext(0, U1.replace('-', '').encode()),
        'set': Ext(4, mp([1, 2])), 'frozen': Ext(5, mp([3])), 'date': Ext(7, mp({'year': 2024, 'month': 1, 'day': 2})),
        'when': dt(2023, 12, 31, 23, 59, 59, 999999), 'app': Ext(42, b'opaque'),
        'big': (1 << 64) - 1, 'neg': -(1 << 40), 1: 'int key'}))
    deep = {'v': 1}
    for _ in range(30):
        deep = {'k': deep}
    yield 'details-31-deep', mp(posting(details=deep))
    yield 'book-extra-keys', mp(posting(book={'name': 'b', 'uuid': BOOK, 'x': 1}))
    yield 'extra-top-key', mp(posting(extra={'x-jobboard': {'v': 1}, 'last_modified': dt(2024, 1, 1)}))
    yield 'created-key-order', mp(posting(created=dt(2024, 2, 29, 12, order=[
        'microsecond', 'second', 'minute', 'hour', 'year', 'month', 'day'])))
    yield 'created-tz', mp(posting(created=dt(2024, 1, 2, extra={'tz': 'UTC'})))
    yield 'created-year-1', mp(posting(created=dt(1, 1, 1)))
    yield 'created-year-9999', mp(posting(created=dt(9999, 12, 31, 23, 59, 59, 999999)))
    bin_keys = mp(posting()).replace(b'\xa4uuid', b'\xc4\x04uuid', 1)
    yield 'bin-key-uuid', bin_keys
    yield 'jobboard-upper-uuid', mp(posting(uuid=U1.upper()))


def resp_bulk(b):
    return b'$%d\r\n%s\r\n' % (len(b), b)


def resp_array(items):
    return b'*%d\r\n' % len(items) + b''.join(items)


def resp_int(n):
    return b':%d\r\n' % n


def redis_replies():
    claim = 'c4a1c0de-0000-4000-8000-00000000beef'
    ok = lambda **kw: resp_bulk(mp(dict(status='ok', **kw)))
    err = lambda reason, **kw: resp_bulk(mp(dict(status='error', reason=reason, **kw)))
    yield 'script-post-ok', ok(sequence=42, fence=0)
    yield 'script-post-claimed-ok', ok(sequence=43, fence=7)
    yield 'script-post-again-listed', err('Job already posted!', sequence=42, listed=True)
    yield 'script-post-again-gone', err('Job already posted!', sequence=42, listed=False)
    yield 'script-post-other', err('Job already posted!')
    yield 'script-claim-ok', ok(fence=9)
    yield 'script-claim-taken', err('Job already claimed!', owner='worker-2', claim=claim, fence=8)
    yield 'script-claim-taskflow', err('Job already claimed!', owner='conductor-1')
    yield 'script-unknown-job', err('Unknown job!')
    yield 'script-unknown-owner', err('Unknown owner!')
    yield 'script-not-owner', err('Not expected owner!', owner='worker-3')
    yield 'script-not-claim', err('Not expected claim!', owner='worker-1', claim=claim)
    yield 'script-invalid', err('Invalid argument!')
    yield 'script-float-seq', resp_bulk(mp({'status': 'ok', 'sequence': 42.0}))
    yield 'script-error-reply', b'-ERR Error running script (call to f_x): @user_script:1: oops\r\n'
    yield 'noscript', b'-NOSCRIPT No matching script. Please use EVAL.\r\n'
    yield 'busy', b'-BUSY Redis is busy running a script.\r\n'
    yield 'exec-claimed', resp_array([resp_int(1), resp_int(0), resp_bulk(b'worker-1'),
                                      resp_array([resp_bulk(claim.encode()), resp_bulk(b'7')]),
                                      resp_int(29000), resp_bulk(b'42')])
    yield 'exec-free', resp_array([resp_int(1), resp_int(0), b'$-1\r\n',
                                   resp_array([b'$-1\r\n', b'$-1\r\n']), resp_int(-2), b'$-1\r\n'])
    yield 'exec-trashed', resp_array([resp_int(0), resp_int(1), b'$-1\r\n',
                                      resp_array([b'$-1\r\n', b'$-1\r\n']), resp_int(-2), resp_bulk(b'17')])
    yield 'exec-aborted', b'*-1\r\n'
    yield 'queued', b'+QUEUED\r\n'
    yield 'ok-pong', b'+OK\r\n+PONG\r\n'
    full = mp(posting(details={'store': {'x': 1}}, book={'name': 'my-book', 'uuid': BOOK}))
    small = mp(posting(uuid=U2, name='m', prio='NORMAL', seq=43))
    yield 'hget-posting', resp_bulk(full)
    yield 'hget-nil', b'$-1\r\n'
    yield 'hgetall', resp_array([resp_bulk(U1.encode()), resp_bulk(full),
                                 resp_bulk(U2.encode()), resp_bulk(small),
                                 resp_bulk(b'not-a-uuid'), resp_bulk(b'\x80')])
    yield 'owner-get-pttl', resp_bulk(b'worker-1') + resp_int(-1) + resp_bulk('wörker-ü'.encode()) + resp_int(1500)
    yield 'owner-not-utf8', resp_bulk(b'\xff\xfeowner') + resp_int(-1)
    yield 'owner-long', resp_bulk(('é' * 200).encode()) + resp_int(-1)
    yield 'hexists', resp_int(1) + resp_int(0)
    yield 'notice-post', resp_array([resp_bulk(b'message'), resp_bulk(b'taskflow:notices'),
                                     resp_bulk(b'post ' + U1.encode() + b' 42')])
    for verb in ('claim', 'abandon', 'consume', 'trash', 'extend'):
        tail = b' 9' if verb in ('claim', 'extend') else b''
        yield 'notice-' + verb, resp_array([resp_bulk(b'message'), resp_bulk(b'taskflow:notices'),
                                            resp_bulk(verb.encode() + b' ' + U2.encode() + tail)])
    yield 'subscribe', resp_array([resp_bulk(b'subscribe'), resp_bulk(b'taskflow:notices'), resp_int(1)])
    yield 'info', resp_bulk(b'# Server\r\nredis_version:7.0.15\r\nredis_git_sha1:00000000\r\n'
                            b'redis_mode:standalone\r\nos:Linux\r\n')
    yield 'info-old', resp_bulk(b'# Server\r\nredis_version:2.4.1\r\n')
    yield 'script-load-sha', resp_bulk(b'e0e1f9fabfc9d4800c877a703b823ac0578ff8db')
    yield 'sequence', resp_bulk(b'42')
    yield 'epoch', resp_bulk(U1.encode())
    yield 'outcome-failed', resp_bulk(mp({'end': 'failed', 'result': mp({'err': 'x'}),
                                          'owner': 'worker-1'}))
    yield 'outcome-dead', resp_bulk(mp({'end': 'dead', 'cause': 'buried',
                                        'reason': 'poison', 'owner': 'w'}))
    yield 'outcome-cancelled', resp_bulk(mp({'end': 'cancelled'}))


def json_seeds():
    yield 'details-store', b'{"store": {"x": 1}}'
    yield 'details-all-types', (b'{"a": [1, -2, 3.5, 1e300, true, false, null, "s\\u0000t"], '
                                b'"b": {"c": {"d": []}}, "u": "\\u00e9\\ud83d\\ude00", '
                                b'"big": 9223372036854775807, "neg": -9223372036854775808}')
    yield 'details-empty', b'{}'
    yield 'not-object', b'[1, 2]'
    yield 'details-31-deep', b'{"k":' * 30 + b'1' + b'}' * 30
    yield 'details-32-deep', b'{"k":' * 31 + b'1' + b'}' * 31
    # msgpack read as details (show/list): tagged outputs of json.h
    yield 'msgpack-tags', mp({'bin': b'\x00\x01', 'ext': Ext(42, b'xyz'),
                              'u64': (1 << 64) - 1, 'nan': float('nan'),
                              'inf': float('inf'), 1: 'int key', b'k': 'bin key',
                              'bad-utf8': Ext(0, b'')})
    yield 'msgpack-posting', mp(posting(details={'store': {'x': 1}},
                                        book={'name': 'my-book', 'uuid': BOOK}))


def batch_seeds():
    yield 'help-example', (b'{"name": "resize", "details": {"path": "a.png"}, "priority": "high", '
                           b'"book_name": "my-book", "book_uuid": "' + BOOK.encode() + b'"}\n')
    yield 'several', b'{"name": "job-1"}\n\n{"name": "job-2", "priority": "LOW"}\r\n  \n{"name":"job-3","details":null}'
    yield 'bad-key', b'{"name": "x", "color": "red"}\n'
    yield 'bad-json', b'{"name": "x"\n'
    yield 'nul-name', b'{"name": "a\\u0000b"}\n'
    yield 'book-half', b'{"name": "x", "book_name": "b"}\n'
    yield 'details-array', b'{"name": "x", "details": [1]}\n'


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), 'corpus')
    sets = {'posting': postings(), 'redis': redis_replies(),
            'json': json_seeds(), 'batch': batch_seeds()}
    for target, seeds in sets.items():
        d = os.path.join(out, target)
        os.makedirs(d, exist_ok=True)
        for name, data in seeds:
            with open(os.path.join(d, name), 'wb') as f:
                f.write(data)
    # The postings are also details-side and JSON-side inputs.
    for name, data in postings():
        for target in ('json',):
            with open(os.path.join(out, target, 'posting-' + name), 'wb') as f:
                f.write(data)


if __name__ == '__main__':
    main()

#!/usr/bin/env python3
"""avro_reschema.py IN OUT OLD NEW [OLD NEW ...]: copy the Avro container IN
to OUT with each OLD replaced by NEW in its avro.schema text (the blocks are
kept as they are). Makes the hand-made seeds of tests/fuzz/corpus/iceberg
whose schema types a field otherwise than Iceberg does (a bound as a long, a
split offset as a string), which random mutation of the bytes rarely
reaches because the schema's length prefix must change with it.
avro_reschema.py --bad-bound OUT writes a small manifest list whose
partition bounds are longs."""
import sys


def read_long(b, i):
    shift = n = 0
    while True:
        c = b[i]
        i += 1
        n |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return (n >> 1) ^ -(n & 1), i


def write_long(v):
    n = (v << 1) ^ (v >> 63)
    out = bytearray()
    while True:
        c = n & 0x7F
        n >>= 7
        if n:
            out.append(c | 0x80)
        else:
            out.append(c)
            return bytes(out)


def container(schema, records):
    """A whole container with one block of the encoded records."""
    sync = bytes(range(16))
    out = bytearray(b'Obj\x01') + write_long(1)
    key, val = b'avro.schema', schema.encode()
    out += write_long(len(key)) + key + write_long(len(val)) + val + write_long(0) + sync
    body = b''.join(records)
    return bytes(out + write_long(len(records)) + write_long(len(body)) + body + sync)


def bad_bound(dst):
    """A manifest list whose partition summary types the bounds as longs
    (Iceberg: bytes), which a reader must refuse, not copy as bytes."""
    schema = ('{"type":"record","name":"manifest_file","fields":['
              '{"name":"manifest_path","type":"string","field-id":500},'
              '{"name":"manifest_length","type":"long","field-id":501},'
              '{"name":"partitions","type":{"type":"array","items":{"type":"record",'
              '"name":"r508","fields":[{"name":"contains_null","type":"boolean","field-id":509},'
              '{"name":"lower_bound","type":"long","field-id":510},'
              '{"name":"upper_bound","type":"long","field-id":511}]}},"field-id":507}]}')
    path = b's3://b/m.avro'
    rec = (write_long(len(path)) + path + write_long(4096) + write_long(1) + b'\x00' +
           write_long(0x41414141) + write_long(0x42424242) + write_long(0))
    open(dst, 'wb').write(container(schema, [rec]))


def main():
    if sys.argv[1] == '--bad-bound':
        return bad_bound(sys.argv[2])
    src, dst, pairs = sys.argv[1], sys.argv[2], sys.argv[3:]
    b = open(src, 'rb').read()
    assert b[:4] == b'Obj\x01', 'not an Avro container'
    i, out, meta = 4, bytearray(b[:4]), []
    while True:
        count, i = read_long(b, i)
        if count == 0:
            break
        if count < 0:
            count = -count
            _, i = read_long(b, i)
        for _ in range(count):
            kn, i = read_long(b, i)
            key = b[i:i + kn]
            i += kn
            vn, i = read_long(b, i)
            val = b[i:i + vn]
            i += vn
            if key == b'avro.schema':
                for old, new in zip(pairs[0::2], pairs[1::2]):
                    assert old.encode() in val, old
                    val = val.replace(old.encode(), new.encode())
            meta.append((key, val))
    out += write_long(len(meta))
    for key, val in meta:
        out += write_long(len(key)) + key + write_long(len(val)) + val
    out += write_long(0) + b[i:]
    open(dst, 'wb').write(bytes(out))


if __name__ == '__main__':
    main()

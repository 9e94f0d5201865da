#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# A tenant writing its service's segment (docs/reference/containers.md: a container with the
# device maps it read-write), as the t_tenant_slots* tests attack with it. The layout
# is found in the file itself, the way a tenant with the headers would know it: the
# pid namespaces' table is the base's last 4 KiB (kMaxSlots u32; the base is the whole
# file in layout 14 and ends at the section directory from layout 15), the slots precede
# it; the slot of an anchor process (the segment's first claim, slot 0) gives where
# they start, and the exited block is the 64-byte line reading
# (processes=EXITED, uncounted=0, a high-water mark, notices 0, two epoch words, zeros)
# before them.
#
#   tenant_slots.py SEG forge ANCHOR_PID EXITED PID START NS COUNT
#       fills slots 1..COUNT-1 (the anchor keeps slot 0) as Live processes (PID, START)
#       of pid namespace NS, and raises the high-water mark to COUNT
#   tenant_slots.py SEG setns ANCHOR_PID EXITED PID NS
#       rewrites the pid namespace of the live slot holding PID
#   tenant_slots.py SEG layout ANCHOR_PID EXITED        prints the offsets found
import mmap
import os
import struct
import sys

K_MAX_SLOTS = 1024
LIVE = 2


def base_end(m, size):
    """Where the layout-14 base ends: the file's end for layout 14, else the section
    directory (its magic "BNSSDIR1" on a 64-byte line) that follows the base."""
    version = struct.unpack_from("<I", m, 8)[0]
    if version <= 14:
        return size
    at = m.find(b"BNSSDIR1")
    while at >= 0 and at % 64:
        at = m.find(b"BNSSDIR1", at + 1)
    if at < 0:
        sys.exit("tenant_slots: layout %d without its section directory" % version)
    return at


def layout(m, size, anchor, exited):
    ns_off = base_end(m, size) - 4 * K_MAX_SLOTS
    head = struct.pack("<Ii", LIVE, anchor)
    slots_off = m.find(head)
    while slots_off >= 0 and slots_off % 64:
        slots_off = m.find(head, slots_off + 1)
    if slots_off < 0:
        sys.exit("tenant_slots: the anchor's slot is not in the segment")
    span = ns_off - slots_off
    if span % K_MAX_SLOTS or (span // K_MAX_SLOTS) % 64:
        sys.exit("tenant_slots: the anchor is not in slot 0 (span %d)" % span)
    slot_size = span // K_MAX_SLOTS
    # (the notices word after the mark, then the claims' epoch words, then zeros)
    head = struct.pack("<QQ", exited, 0)
    found = [o for o in range(0, slots_off, 64)
             if m[o:o + 16] == head and m[o + 20:o + 24] == bytes(4) and m[o + 40:o + 64] == bytes(24)
             and 1 <= struct.unpack_from("<I", m, o + 16)[0] <= K_MAX_SLOTS]
    if len(found) != 1:
        sys.exit("tenant_slots: %d candidates for the exited block" % len(found))
    return slots_off, slot_size, ns_off, found[0] + 16


def main():
    path, cmd = sys.argv[1], sys.argv[2]
    anchor, exited = int(sys.argv[3]), int(sys.argv[4])
    fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
    size = os.fstat(fd).st_size
    m = mmap.mmap(fd, size)
    slots_off, slot_size, ns_off, used_off = layout(m, size, anchor, exited)
    if cmd == "layout":
        print(slots_off, slot_size, ns_off, used_off)
    elif cmd == "forge":
        pid, start, ns, count = (int(a) for a in sys.argv[5:9])
        for i in range(1, count):
            o = slots_off + i * slot_size
            struct.pack_into("<I", m, ns_off + 4 * i, ns)
            struct.pack_into("<iQQQ16s", m, o + 4, pid, start, 2, 0, b"forged")
            struct.pack_into("<I", m, o, LIVE)
        struct.pack_into("<I", m, used_off, count)
    elif cmd == "setns":
        pid, ns = int(sys.argv[5]), int(sys.argv[6])
        hits = [i for i in range(K_MAX_SLOTS)
                if struct.unpack_from("<Ii", m, slots_off + i * slot_size) == (LIVE, pid)]
        if len(hits) != 1:
            sys.exit("tenant_slots: %d live slots hold pid %d" % (len(hits), pid))
        struct.pack_into("<I", m, ns_off + 4 * hits[0], ns)
        print(hits[0])
    else:
        sys.exit("tenant_slots: unknown command " + cmd)
    m.close()
    os.close(fd)


main()

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every file data-call family of a plain build under one cap: read/write, pread,
# readv, preadv, preadv2, sendfile, copy_file_range, splice, vmsplice, tee,
# syscall(SYS_read/SYS_write), stdio fread/fwrite, fgets/fputs, getline.
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/xfer_cases.sh"
need_prog file_xfer
P=$PRE/file_xfer
imports "$P" read write pread pwrite readv writev preadv pwritev preadv2 pwritev2 sendfile \
  copy_file_range splice vmsplice tee syscall fread fwrite fgets fputs __getdelim
make_data "$T/bin" 4
make_text "$T/txt" 4

# mode, source, bytes charged per byte copied
cases="rw:bin:2 pread:bin:2 readv:bin:2 preadv:bin:2 preadv2:bin:2 sendfile:bin:1 cfr:bin:1
splice:bin:2 vmsplice:bin:3 tee:bin:5 syscall:bin:2 stdio:bin:2 lines:txt:2 getline:txt:2"
half1="rw pread readv preadv preadv2 sendfile cfr"
for c in $cases; do
  IFS=: read -r mode src factor <<< "$c"
  case " $half1 " in *" $mode "*) xfer_start file_xfer "$mode" "$T/$src" "$factor" ;; esac
done
xfer_wait
for c in $cases; do
  IFS=: read -r mode src factor <<< "$c"
  case " $half1 " in *" $mode "*) ;; *) xfer_start file_xfer "$mode" "$T/$src" "$factor" ;; esac
done
xfer_wait

xfer_check file_xfer rw "$T/bin" read write
xfer_check file_xfer pread "$T/bin" pread pwrite
xfer_check file_xfer readv "$T/bin" readv writev
xfer_check file_xfer preadv "$T/bin" preadv pwritev
xfer_check file_xfer preadv2 "$T/bin" preadv pwritev
xfer_check file_xfer sendfile "$T/bin" sendfile
xfer_check file_xfer cfr "$T/bin" copy_file_range
xfer_check file_xfer splice "$T/bin" splice
xfer_check file_xfer vmsplice "$T/bin" read vmsplice splice
xfer_check file_xfer tee "$T/bin" read vmsplice tee splice
xfer_check file_xfer syscall "$T/bin" read write
xfer_check file_xfer stdio "$T/bin" fread fwrite
xfer_check file_xfer lines "$T/txt" fread fwrite
xfer_check file_xfer getline "$T/txt" fread fwrite

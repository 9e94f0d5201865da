#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# An epoll set made before a fork, used by the child (t_pace_fork.sh, issue 35): N
# non-blocking socket pairs registered edge-triggered in the parent; the forked child
# writes EACH bytes to each, a short send or EAGAIN waiting for the next edge, which
# the library makes when the descriptor's turn in the bucket's queue comes. Prints the
# child's bytes, seconds and readiness waits; exits 1 if a wait times out (a lost edge).
import os, select, socket, time, threading
N=4; EACH=256*1024
pairs=[socket.socketpair() for _ in range(N)]
ep=select.epoll()
for i,(a,b) in enumerate(pairs):
    a.setblocking(False); ep.register(a.fileno(), select.EPOLLOUT|select.EPOLLET)
pid=os.fork()
if pid==0:
    def drain(s):
        while s.recv(65536): pass
    for a,b in pairs: threading.Thread(target=drain,args=(b,),daemon=True).start()
    sent=[0]*N; ready=[True]*N; fdi={a.fileno():i for i,(a,b) in enumerate(pairs)}
    buf=b'x'*65536; t0=time.monotonic(); waits=0
    while min(sent)<EACH:
        for i,(a,b) in enumerate(pairs):
            while ready[i] and sent[i]<EACH:
                try:
                    n=a.send(buf[:EACH-sent[i]])
                    sent[i]+=n
                    if n < min(65536, EACH-sent[i]+n): ready[i]=False
                except BlockingIOError: ready[i]=False
        if min(sent)>=EACH: break
        waits+=1
        ev=ep.poll(2.0)
        if not ev: print("TIMEOUT", sent); os._exit(1)
        for fd,e in ev: ready[fdi[fd]]=True
    print(f"bytes={N*EACH} secs={time.monotonic()-t0:.4f} waits={waits}")
    os._exit(0)
_,st=os.waitpid(pid,0)
raise SystemExit(os.waitstatus_to_exitcode(st))

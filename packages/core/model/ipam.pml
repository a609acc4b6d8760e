/*
 * ipamkit's allocation protocol as the code implements it (packages/core/DESIGN.md, "Protocol
 * model", maps every step below to its TypeScript function). Checked exhaustively by spin:
 * packages/core/src/protocol-model.test.ts; and linked to the code request by request: every
 * store request prints an "MSC: @actor ..." line, and a trail (or a random simulation) is
 * replayed against the real code as a schedule (protocol-link.*.fixtures.ts), which must make
 * exactly these requests, get these answers and leave the store in the state printed after each
 * write ("MSC: S ...").
 *
 * Stores: pools, overlapping-range claims and block-affinity claims, each record with a version
 * that changes on every write (never given again) and compare-and-swap writes. A pool write is
 * the whole pool image the writer computed from its read. One store request is one atomic step
 * (d_step). An actor may crash between any two of its requests (CP). With UNKNOWN, one write
 * may have an unknown outcome: sent and applied (if its compare held), or lost before the store,
 * and the writer only learns that it does not know.
 *
 * Address space: 4 addresses a0..a3 of one network; 2 blocks of 2 (pool 1 = block 0 = a0,a1;
 * pool 2 = block 1 = a2,a3), and pool 3, a plain range over a0..a2 whose CIDR holds all four
 * (OVERLAP only). Initially block 1 is claimed by node 3, which died holding a2 for key 3 (its
 * claim too).
 *
 * Configurations, the first three in one run unless one is named (-D): TWO_NODES (allocators on
 * nodes 1 and 2: node 2 claims block 0 or borrows), SAME_NODE (the agent and the binary in direct
 * mode on node 1), OVERLAP (node 1's agent beside a direct writer of the overlapping plain pool);
 * NO_OVERLAP: the first two. SAME_KEY (only when named): the agent and the binary in direct mode
 * on node 1 called for ONE attachment at once (both key 1); node 1 owns block 0, full with a dead
 * sandbox's entry (key 3) and a live attachment's (key 2), block 1 unclaimed.
 * ALONE: actor 1 only (node 1), beside the reconciler.
 * Scope: CRASH, NPASS, MAYDEL, MAXTRY (ATRY, RTRY), UNKNOWN (below); READD (actor 1 may DEL and ADD again,
 * its pod staying); REBORN (key 2's pod is key 1's pod reborn: same name, another UID; it is
 * created once key 1's pod is gone).
 *
 * Pods: an attachment's pod is created when its first ADD begins and deleted when its last DEL
 * begins (or its actor crashes). The reconciler lists the pods after it read the pools, and reads
 * each orphan's pod again before releasing (the pod list is a snapshot taken at that step, not
 * an oracle).
 *
 * An ADD in block mode plans again from fresh reads after claiming a block, after a block filled
 * meanwhile, and when its retries run out. FENCED (SAME_KEY, or -DFENCE_ALL): it also fences its
 * choice as block-commit.ts does on whole-pool stores: before each write placing its key, the
 * other searched block is touched at the version the choice saw, or the first unclaimed block's
 * affinity claim is read and must be absent; a broken fence plans again.
 *
 * Checked: no address held by two keys, no key with two addresses (after every pool write); no
 * write drops another writer's entry; a live attachment's ADDs answer one address; an answered
 * reservation of a live attachment is never lost and its claim always names its pool (a monitor
 * between any two steps); the reconciler never releases a live attachment's entry; an ADD that
 * met no other actor's write and no unknown outcome fails only when no address was free (bounded
 * progress); after every actor finished and a reconciler pass ran: no claim that no entry backs,
 * no entry without its claim, no entry of a dead attachment.
 *
 * Deliberately broken variants: BROKEN_PODREF (the reconciler releases by pod name: entries
 * indexed by pod name, the last of a name wins; Whereabouts#176), BROKEN_BLIND (pool writes
 * ignore the version), BROKEN_NOFENCE (a dangling claim of another pool is taken over without
 * fencing that pool), BROKEN_NOTOUCH (an ADD's choice is not fenced), BROKEN_STALE (a release
 * retried after a conflict takes the fresh version but keeps its first decision), BROKEN_REPAIR
 * (a claim repair deletes or rewrites without fencing the named pool first), BROKEN_DELNOVER (a
 * DEL deletes its claim whatever its version), BROKEN_PODSFIRST (the pods as listed before the
 * pools were read: the list and the orphans' re-reads answer from it; Whereabouts#207),
 * BROKEN_GIVEUP (an ADD that claimed a block answers "exhausted" instead of planning again: only
 * bounded progress catches it).
 */

#ifndef CRASH
#define CRASH 1      /* 1: one actor, any of the three, may crash once, at any point; 0: none */
#endif
#ifndef MAXTRY
#define MAXTRY 2     /* attempts of the one retry helper (withConflictRetry), in every loop it runs */
#endif
#ifndef ATRY
#define ATRY MAXTRY  /* ... in the allocators' processes (their retry options) */
#endif
#ifndef RTRY
#define RTRY MAXTRY  /* ... in the reconciler's */
#endif
#ifndef NPASS
#define NPASS 1      /* reconciler passes concurrent with the allocators (one more after them) */
#endif
#ifndef MAYDEL
#define MAYDEL 2     /* allocators (actors 1..MAYDEL) that may DEL their attachment after the ADD; the others stay */
#endif
#ifndef UNKNOWN
#define UNKNOWN 0    /* writes of unknown outcome (0 or 1), by any actor but the reconciler's last pass */
#endif
#if UNKNOWN > 1
#error "UNKNOWN is 0 or 1"
#endif
#if UNKNOWN > 0 && (ATRY < 2 || RTRY < 2)
#error "UNKNOWN needs MAXTRY >= 2 (a delete of unknown outcome is sent once more)"
#endif

/* the attempts of the process running a shared step (repairClaim): the reconciler's or an allocator's */
#define TRIES (me == 3 -> RTRY : ATRY)

#define NONE 255
#define UNKV 254     /* an owed claim whose write had an unknown outcome: the next read finds out */
/* a write's answer: printed as r0..r3 (r2: sent, answer lost; r3: lost before the store) */
#define CONFLICT 0
#define OK 1
#define UNK 2

/* BROKEN_DELNOVER: every claim delete of a DEL (indel) ignores the version */
#ifdef BROKEN_DELNOVER
#define DELANY indel
#else
#define DELANY 0
#endif

#if (defined(SAME_KEY) || defined(FENCE_ALL)) && !defined(BROKEN_NOTOUCH)
#define FENCED
#endif

/* ---- the configuration: 1 TWO_NODES, 2 SAME_NODE, 3 OVERLAP (chosen by init); 4 SAME_KEY (alone) ---- */
byte mode;
byte npools;                /* pools that may exist: the blocks, and in OVERLAP the plain pool */

/* ---- the stores ---- */
byte pver[4];               /* pool version; 0: the pool does not exist */
byte hold[16];              /* H(p,a): the key holding address a in pool p; 0: free */
#define H(p,a) hold[(p)*4+(a)]
#define PFIRST(p) ((p)==2 -> 2 : 0)
#define PLAST(p)  ((p)==1 -> 1 : ((p)==2 -> 3 : 2))
#define INPOOL(p,a) ((a) >= PFIRST(p) && (a) <= PLAST(p))      /* in the pool's range */
#define INCIDR(p,a) ((p) == 3 || INPOOL(p,a))                   /* in the pool's CIDR (pool 3's /29 holds all four) */
/* pools in listing order (by CIDR text): with the plain pool, 10.0.0.0/29 comes first */
#define POOLAT(q) (npools == 3 -> ((q) == 0 -> 3 : (q)) : (q) + 1)
/* a pool image (what a read returns and a write writes): two bits per address of the pool's range */
#define SLOT(img,p,a) (INPOOL(p,a) -> (((img) >> (2 * ((a) - PFIRST(p)))) & 3) : 0)
#define WITH(img,p,a,k) (((img) & ~(3 << (2 * ((a) - PFIRST(p))))) | ((k) << (2 * ((a) - PFIRST(p)))))
byte cver[4];               /* overlapping-range claim of address a: version (never reused) */
byte cpool[4];              /* the pool it names; 0: no claim */
byte ckey[4];               /* the key it names */
byte aff[2];                /* affinity claim of block b: the node; 0: unclaimed (never deleted) */
#define ORD(n,j) ((n)==2 -> 1-(j) : (j))   /* node 2 visits block 1 first */

/* ---- the world ---- */
bool alive[4];              /* key k's pod exists (from its first ADD until its last DEL or its actor's crash) */
bool gone[4];               /* key k's pod was deleted */
bool added[4];              /* an ADD of key k answered a reservation (wrote it, or found it); cleared by a DEL */
byte gotP[4]; byte gotA[4]; /* where (the last answer; a live attachment's answers are one address) */
byte podOf[4];              /* key -> pod name (UID: the key) */
byte crasher;               /* the actor that may crash (1, 2: allocators; 3: the reconciler; 0: none) */
byte finished;
byte nact;                  /* allocators run (ALONE: actor 1 only) */
bool fin1;                  /* actor 1 finished (REBORN) */
byte unk;                   /* writes of unknown outcome still to come */
byte calm;                  /* bit i: actor i's ADD met no other actor's write and no unknown outcome since it began */
byte scr;                   /* scratch, inside d_steps only (always 0 between steps) */
byte sci;

#define ALIVEMASK ((alive[1] -> 2 : 0) | (alive[2] -> 4 : 0) | (alive[3] -> 8 : 0))
#define FREE(a) (H(1,a) == 0 && H(2,a) == 0 && H(3,a) == 0)

/* A reservation answered to a live attachment is still in the store, and its claim names its pool. */
#define LOST(k) (added[k] && alive[k] && H(gotP[k], gotA[k]) != k)
#define UNCLAIMED(k) (added[k] && alive[k] && cpool[gotA[k]] != gotP[k])
#define BAD (LOST(1) || LOST(2) || UNCLAIMED(1) || UNCLAIMED(2))

/*
 * A crash point: the actor may die here; never in the reconciler's last pass. `mayCrash` is a
 * local copy of (crasher == this actor), so a crash point is a local choice.
 */
#define CP if :: mayCrash -> mayCrash = 0; goto crashed :: true -> skip fi

/* ---- printing: the request lines and the store after each write ---- */
inline printState() {
  printf("MSC: S %d %d %d %d %d %d %d %d %d %d | %d %d %d %d %d %d %d %d | %d %d\n",
    pver[1] > 0, H(1,0), H(1,1), pver[2] > 0, H(2,2), H(2,3), pver[3] > 0, H(3,0), H(3,1), H(3,2),
    cpool[0], ckey[0], cpool[1], ckey[1], cpool[2], ckey[2], cpool[3], ckey[3], aff[0], aff[1])
}

/* no address held by two keys (pools 1/2 and pool 3 share a0..a2), no key with two addresses */
inline checkHolds() {
  assert(!(H(1,0) != 0 && H(3,0) != 0) && !(H(1,1) != 0 && H(3,1) != 0) && !(H(2,2) != 0 && H(3,2) != 0));
  scr = 0; sci = 0;
  do
  :: sci < 16 ->
     if :: hold[sci] != 0 -> assert(((scr >> hold[sci]) & 1) == 0); scr = scr | (1 << hold[sci]) :: else -> skip fi; sci++
  :: else -> break
  od;
  scr = 0; sci = 0
}

/* the image of pool pp as stored now */
inline imageOf(pp, img) {
  img = 0; sci = PFIRST(pp);
  do :: sci <= PLAST(pp) -> img = img | (H(pp, sci) << (2 * (sci - PFIRST(pp)))); sci++ :: else -> break od;
  sci = 0
}

/*
 * writePool at version v (0: create-if-absent) of image img, inside a d_step: sets res and nv.
 * drop: addresses the writer frees on purpose — the key dk's own (a DEL), or (dk = 0, the
 * reconciler) only a dead attachment's. ak/aa: the ADD's key and address, answered if it lands.
 */
inline casPool(p, v, img, drop, dk, ak, aa) {
#ifdef BROKEN_BLIND
  if :: true ->
#else
  if :: pver[p] == v ->
#endif
     sci = PFIRST(p);
     do
     :: sci <= PLAST(p) ->
        /* no write drops another writer's entry; the reconciler frees no live attachment's */
        assert(H(p, sci) == 0 || SLOT(img, p, sci) == H(p, sci) ||
               (((drop >> sci) & 1) && (H(p, sci) == dk || (dk == 0 && !alive[H(p, sci)]))));
        H(p, sci) = SLOT(img, p, sci); sci++
     :: else -> break
     od;
     sci = 0; pver[p]++; nv = pver[p]; res = OK; calm = calm & (1 << me);
     checkHolds()
  :: else -> res = CONFLICT
  fi
}

/* writePool: one request. With an unknown outcome left: applied (if its compare held) or not, the writer told UNK */
inline poolWrite(p, v, img, drop, dk, ak, aa) {
  if
  :: d_step {
       casPool(p, v, img, drop, dk, ak, aa);
       if
       :: res == OK && ak != 0 ->
          assert(!(added[ak] && alive[ak]) || (gotP[ak] == p && gotA[ak] == aa));   /* a live attachment's answers are one address */
          added[ak] = 1; gotP[ak] = p; gotA[ak] = aa
       :: else -> skip
       fi;
       printf("MSC: @%d writePool %d r%d\n", me, p, res); printState()
     }
#if UNKNOWN > 0
  :: d_step { unk > 0; unk--; casPool(p, v, img, drop, dk, ak, aa); res = UNK; calm = calm & ~(1 << me);
              printf("MSC: @%d writePool %d r2\n", me, p); printState() }
  :: d_step { unk > 0; unk--; res = UNK; calm = calm & ~(1 << me); printf("MSC: @%d writePool %d r3\n", me, p); printState() }
#endif
  fi
}

/* writeClaim of address a naming (np, nk): create-if-absent (ev = 0) or compare-and-swap at ev */
inline casClaim(a, np, nk, ev) {
  if
  :: (ev == 0 && cpool[a] == 0) || (ev != 0 && cpool[a] != 0 && cver[a] == ev) ->
     cpool[a] = np; ckey[a] = nk; cver[a]++; cv = cver[a]; res = OK; calm = calm & (1 << me)
  :: else -> res = CONFLICT
  fi
}

inline claimWrite(a, np, nk, ev) {
  if
  :: d_step { casClaim(a, np, nk, ev); printf("MSC: @%d writeClaim %d r%d\n", me, a, res); printState() }
#if UNKNOWN > 0
  :: d_step { unk > 0; unk--; casClaim(a, np, nk, ev); res = UNK; calm = calm & ~(1 << me);
              printf("MSC: @%d writeClaim %d r2\n", me, a); printState() }
  :: d_step { unk > 0; unk--; res = UNK; calm = calm & ~(1 << me); printf("MSC: @%d writeClaim %d r3\n", me, a); printState() }
#endif
  fi
}

/* deleteClaim of address a at version ev (any: whatever its version, BROKEN_DELNOVER's DEL) */
inline casDelete(a, ev, any) {
  if
  :: cpool[a] != 0 && (cver[a] == ev || any) -> cpool[a] = 0; ckey[a] = 0; cver[a]++; res = OK; calm = calm & (1 << me)
  :: else -> res = CONFLICT
  fi
}

inline claimDelete(a, ev, any) {
  if
  :: d_step { casDelete(a, ev, any); printf("MSC: @%d deleteClaim %d r%d\n", me, a, res); printState() }
#if UNKNOWN > 0
  :: d_step { unk > 0; unk--; casDelete(a, ev, any); res = UNK; calm = calm & ~(1 << me);
              printf("MSC: @%d deleteClaim %d r2\n", me, a); printState() }
  :: d_step { unk > 0; unk--; res = UNK; calm = calm & ~(1 << me); printf("MSC: @%d deleteClaim %d r3\n", me, a); printState() }
#endif
  fi
}

/* dropSettled: the delete, sent once more after an unknown outcome (refused once it landed) */
inline dropSettled(a, ev, any) {
  claimDelete(a, ev, any); CP;
  if :: res == UNK -> claimDelete(a, ev, any); CP :: else -> skip fi
}

/* an affinity claim of block b for node n, create-if-absent */
inline affWrite(b, n) {
  if
  :: d_step {
       if :: aff[b] == 0 -> aff[b] = n; res = OK; calm = calm & (1 << me) :: else -> res = CONFLICT fi;
       printf("MSC: @%d writeAff %d r%d\n", me, b, res); printState()
     }
#if UNKNOWN > 0
  :: d_step { unk > 0; unk--; if :: aff[b] == 0 -> aff[b] = n; calm = calm & (1 << me) :: else -> skip fi; res = UNK; calm = calm & ~(1 << me);
              printf("MSC: @%d writeAff %d r2\n", me, b); printState() }
  :: d_step { unk > 0; unk--; res = UNK; calm = calm & ~(1 << me); printf("MSC: @%d writeAff %d r3\n", me, b); printState() }
#endif
  fi
}

/* readPool: version, image, lowest free address outside `avoid`, 1 + the address key k holds (0: none) */
inline readPool(pp, v, img, pick, avoid, k, mine) {
  d_step {
    printf("MSC: @%d readPool %d\n", me, pp);
    v = pver[pp]; img = 0; pick = NONE; mine = 0; sci = PFIRST(pp);
    do
    :: sci <= PLAST(pp) ->
       img = img | (H(pp, sci) << (2 * (sci - PFIRST(pp))));
       if :: H(pp, sci) == 0 && pick == NONE && ((avoid >> sci) & 1) == 0 -> pick = sci :: else -> skip fi;
       if :: H(pp, sci) == k -> mine = sci + 1 :: else -> skip fi; sci++
    :: else -> break
    od;
    sci = 0
  }
}

/* a read of pool pp's version and image only */
inline readImage(pp, v, img) {
  d_step { printf("MSC: @%d readPool %d\n", me, pp); v = pver[pp]; imageOf(pp, img) }
}

inline claimRead(a) {
  d_step { printf("MSC: @%d readClaim %d\n", me, a); rp = cpool[a]; rk = ckey[a]; rv = cver[a] }
}

/*
 * repairClaim (claim-repair.ts): make the claim of address a match the pools as read now, fenced.
 * The caller sets rexp (only the claim at this version; 0: as read), rwrote (it just wrote it),
 * rnp/rnk (only a claim naming this pool and key; 0: any); cands: other pools that may hold a
 * (bit mask; read after the named pool, in listing order).
 */
inline repairClaim(a, cands) {
  rtries = 0; runs = 0; rrew = 0;
  do
  :: claimRead(a); CP;
     if
     :: runs && rp != 0 && rp == rup && rk == ruk -> rexp = rv; rrew = 1; rwrote = 1   /* the rewrite of unknown outcome landed */
     :: else -> skip
     fi;
     runs = 0;
     if
     :: rp == 0 -> break                                                        /* absent */
     :: rp != 0 && rexp != 0 && rv != rexp -> break                             /* changed */
     :: rp != 0 && (rexp == 0 || rv == rexp) && !rwrote && rnp != 0 && !(rp == rnp && rk == rnk) -> break   /* not ours */
     :: else -> skip
     fi;
     hp = 0; hk = 0; nheld = 0;
     d_step {
       printf("MSC: @%d readPool %d\n", me, rp); rdv[rp] = pver[rp]; imageOf(rp, rdi[rp]);
       if :: H(rp, a) != 0 -> hp = rp; hk = H(rp, a); nheld++ :: else -> skip fi
     };
     CP;
     rq = 0;
     do
     :: rq < npools ->
        rc = POOLAT(rq);
        if
        :: rc != rp && ((cands >> rc) & 1) ->
           d_step {
             printf("MSC: @%d readPool %d\n", me, rc); rdv[rc] = pver[rc]; imageOf(rc, rdi[rc]);
             if
             :: H(rc, a) != 0 -> nheld++; if :: hp == 0 -> hp = rc; hk = H(rc, a) :: else -> skip fi
             :: else -> skip
             fi
           };
           CP
        :: else -> skip
        fi;
        rq++
     :: else -> break
     od;
     rq = 0;
     if
     :: nheld > 1 -> break                                                      /* ambiguous: an operator's */
     :: nheld <= 1 && hp != 0 && hp == rp && hk == rk ->                        /* consistent */
        if
        :: rwrote -> poolWrite(hp, rdv[hp], rdi[hp], 0, 0, 0, 0); CP;           /* a claim just written is settled by a fence */
           if :: res == OK -> break :: else -> skip fi
        :: else -> break
        fi
     :: else ->
#ifndef BROKEN_REPAIR
        if
        :: hp == 0 || hp != rp -> poolWrite(rp, rdv[rp], rdi[rp], 0, 0, 0, 0); CP   /* the named pool first */
        :: else -> res = OK
        fi;
#else
        res = OK;
#endif
        if
        :: res != OK -> skip                                                    /* conflict or unknown: read again */
        :: res == OK && hp == 0 ->
           claimDelete(a, rv, DELANY); CP;                                           /* dropClaim at the version read */
           if :: res != UNK -> break :: else -> skip fi                         /* deleted, or changed */
        :: res == OK && hp != 0 ->
           claimWrite(a, hp, hk, rv); CP;
           if
           :: res == CONFLICT -> break                                          /* changed: theirs */
           :: res == UNK -> runs = 1; rup = hp; ruk = hk
           :: res == OK -> rexp = cv; rrew = 1; rwrote = 1;
              poolWrite(hp, rdv[hp], rdi[hp], 0, 0, 0, 0); CP;
              if :: res == OK -> break :: else -> skip fi
           fi
        fi
     fi;
     rtries++;
     if :: rtries >= TRIES -> break :: else -> skip fi                        /* retries exhausted: the next pass */
  od;
  skip;
  d_step {
    rtries = 0; rq = 0; rc = 0; runs = 0; rrew = 0; rup = 0; ruk = 0; rp = 0; rk = 0; rv = 0; hp = 0; hk = 0; nheld = 0; cv = 0; res = 0; nv = 0;
    rexp = 0; rwrote = 0; rnp = 0; rnk = 0;
    sci = 0; do :: sci < 4 -> rdv[sci] = 0; rdi[sci] = 0; sci++ :: else -> break od; sci = 0
  }
}

/* ---- an allocator: one attachment's ADD, then maybe its DEL (and, READD, an ADD again) ---- */

/* the claims this allocation owes (OwedClaims), in the order owed: address, version (UNKV: unknown), key named, free */
inline owDrop(s) {
  d_step {
    sci = s;
    do
    :: sci + 1 < nowed -> owA[sci] = owA[sci + 1]; owV[sci] = owV[sci + 1]; owK[sci] = owK[sci + 1]; owF[sci] = owF[sci + 1]; sci++
    :: else -> break
    od;
    nowed--; owA[nowed] = 0; owV[nowed] = 0; owK[nowed] = 0; owF[nowed] = 0; sci = 0
  }
}

inline owAdd(a, ver, k) {
  d_step { owA[nowed] = a; owV[nowed] = ver; owK[nowed] = k; owF[nowed] = 0; nowed++ }
}

inline owForget(a) {
  s = 0;
  do
  :: s < nowed && owA[s] == a -> owDrop(s); break
  :: s < nowed && owA[s] != a -> s++
  :: s >= nowed -> break
  od;
  s = 0
}

inline owClear() {
  d_step { sci = 0; do :: sci < ATRY -> owA[sci] = 0; owV[sci] = 0; owK[sci] = 0; owF[sci] = 0; sci++ :: else -> break od; nowed = 0; sci = 0 }
}

/* OwedClaims.judge against the pool as just read (img): jres = UNK when a rewrite had an unknown outcome (the attempt ends) */
inline judge() {
  jres = OK; s = 0;
  do
  :: s < nowed ->
     if
     :: owV[s] == UNKV ->
        d_step {
          printf("MSC: @%d readClaim %d\n", me, owA[s]);
          if :: cpool[owA[s]] == p && ckey[owA[s]] == owK[s] -> owV[s] = cver[owA[s]] :: else -> owV[s] = 0 fi
        };
        CP
     :: else -> skip
     fi;
     if
     :: owV[s] == 0 -> owDrop(s)                                                /* not ours: it did not land, or somebody's since */
     :: owV[s] != 0 && SLOT(img, p, owA[s]) == 0 -> owF[s] = 1; s++             /* free: deleted after the fence */
     :: owV[s] != 0 && SLOT(img, p, owA[s]) != 0 && SLOT(img, p, owA[s]) == owK[s] -> owF[s] = 0; s++
     :: owV[s] != 0 && SLOT(img, p, owA[s]) != 0 && SLOT(img, p, owA[s]) != owK[s] ->
        owF[s] = 0; h = SLOT(img, p, owA[s]);
        claimWrite(owA[s], p, h, owV[s]); CP;                                   /* rewritten to name the holder */
        if
        :: res == OK -> owV[s] = cv; owK[s] = h; s++
        :: res == CONFLICT -> owDrop(s)                                         /* somebody's now */
        :: res == UNK -> owV[s] = UNKV; owK[s] = h; jres = UNK; break
        fi;
        h = 0
     fi
  :: else -> break
  od;
  s = 0; cv = 0
}

/* OwedClaims.fenced: the pool write at the version judged against was the fence; the free ones deleted */
inline fenced() {
  s = 0;
  do
  :: s < nowed ->
     if :: owF[s] && owV[s] != UNKV -> dropSettled(owA[s], owV[s], 0) :: else -> skip fi; s++
  :: else -> break
  od;
  s = 0; owClear()
}

/*
 * The call's fences, before each write that places the key (block-commit.ts touchedFences): the
 * other searched block (fp) touched at the version the choice saw (fv, image fimg), then at the
 * touch's; or the first unclaimed block's (fu - 1) affinity claim read afresh, to be absent.
 * ok = 0: FenceBrokenError (a touch of unknown outcome too), nothing more is written.
 */
inline applyFences() {
  ok = 1;
  if
  :: fp != 0 -> poolWrite(fp, fv, fimg, 0, 0, 0, 0); CP;
     if :: res == OK -> fv = nv :: else -> ok = 0 fi
  :: fu != 0 -> d_step { printf("MSC: @%d readAff %d\n", me, fu - 1); ok = (aff[fu - 1] == 0) }; CP
  :: else -> skip
  fi
}

/* The ADD answers address aa of pool pp, found there without a write. A live attachment's answers are one address. */
inline answer(pp, aa) {
  d_step {
    printf("MSC: @%d held %d %d\n", me, pp, aa);
    assert(!(added[key] && alive[key]) || (gotP[key] == pp && gotA[key] == aa));
    added[key] = 1; gotP[key] = pp; gotA[key] = aa
  }
}

/* OwedClaims.settle: what is still owed when the call writes no pool of its own */
inline settle() {
  t = 0;
  do
  :: nowed == 0 -> break
  :: nowed != 0 ->
     readPool(p, v, img, pick, 0, key, mine); CP;
     judge();
     if
     :: jres == UNK -> skip
     :: jres != UNK && nowed == 0 -> break
     :: jres != UNK && nowed != 0 ->
        /* the fence: the pool rewritten unchanged (created empty when absent); when it holds the key, fenced first */
        ok = 1;
        if :: mine != 0 && (fp | fu) != 0 -> applyFences() :: else -> skip fi;
        if :: !ok -> break :: else -> skip fi                                  /* FenceBrokenError: left for the reconciler */
        poolWrite(p, v, img, 0, 0, 0, 0); CP;
        if :: res == OK -> fenced(); break :: else -> skip fi
     fi;
     t++;
     if :: t >= ATRY -> break :: else -> skip fi                              /* left for the reconciler */
  od;
  t = 0; v = 0; img = 0; pick = NONE; mine = 0; owClear()
}

/* the node's view of blocks (readNodeView): one affinity claim read after the other up to the first unclaimed (claims only grow: as one step) */
inline view() {
  d_step {
    unclaimed = NONE; ns = 0; j = 0;
    do
    :: j < 2 ->
       printf("MSC: @%d readAff %d\n", me, ORD(node, j));
       if
       :: aff[ORD(node, j)] == 0 -> unclaimed = ORD(node, j); break
       :: aff[ORD(node, j)] == node -> sb[ns] = ORD(node, j); ns++
       :: else -> skip
       fi;
       j++
    :: else -> break
    od;
    if
    :: unclaimed == NONE ->                       /* none unclaimed: everyone's blocks (borrow) */
       j = 0;
       do
       :: j < 2 -> if :: aff[ORD(node, j)] != node -> sb[ns] = ORD(node, j); ns++ :: else -> skip fi; j++
       :: else -> break
       od
    :: else -> skip
    fi;
    j = 0
  }
}

proctype Allocator(byte me; byte node; byte key; bool plain)   /* me: the actor (crasher), key: the attachment */
{
  byte i, j, q, s, t, h, v, img, pick, mine, avoid, hv, himg, hpick, p, a, attempt, replans, cv, rp, rk, rv, ov, oimg, res, nv, jres;
  byte fp, fv, fimg, fu, unclaimed, ns, found, ua, ucv, sa, simg;
  byte rtries, rexp, rup, ruk, rnp, rnk, rq, rc, hp, hk, nheld;
  byte owA[ATRY]; byte owV[ATRY]; byte owK[ATRY]; bool owF[ATRY]; byte nowed;
  byte sb[2]; byte seen[2]; byte seenimg[2]; byte rdv[4]; byte rdi[4];
  bool ok, created, handed, has, rel, us, uhas, failed, again, keep, readd, broken, stale, indel, rwrote, rrew, runs, mayCrash;

  mayCrash = (crasher == me);
#ifdef REBORN
  /* key 2's pod is key 1's reborn: created once key 1's pod is gone (never, if it stays) */
  if
  :: me == 2 -> if :: gone[1] -> skip :: fin1 && !gone[1] -> goto l_done fi
  :: else -> skip
  fi;
#endif
l_add:
  skip;
  d_step { printf("MSC: @%d add\n", me); if :: mode != 4 -> alive[key] = 1 :: else -> skip fi; calm = calm | (1 << me) };
  replans = 0; pick = NONE;
  if :: plain -> p = 3; goto l_alloc :: else -> skip fi;

l_choose:   /* chooseBlock + planAdd: the block holding the key, else the first with room among those searched (fenced), else claim the first unclaimed */
  skip;
  view(); CP;
  p = 0; j = 0;
  do
  :: j < ns ->
     readPool(sb[j] + 1, v, img, pick, 0, key, mine); CP;
     if :: mine != 0 -> p = sb[j] + 1; break :: else -> skip fi;    /* held: read no further */
     if :: p == 0 && pick != NONE -> p = sb[j] + 1; hv = v; himg = img; hpick = pick :: else -> skip fi;
     seen[j] = v; seenimg[j] = img; j++
  :: else -> break
  od;
  skip;
  d_step {
#ifdef FENCED
    /* fencesFor: the other searched block at the version seen; or the first unclaimed block */
    if
    :: mine == 0 && p != 0 && unclaimed != NONE -> fu = unclaimed + 1
    :: mine == 0 && p != 0 && ns == 2 ->
       fp = (p == sb[0] + 1 -> sb[1] : sb[0]) + 1; fv = (p == sb[0] + 1 -> seen[1] : seen[0]); fimg = (p == sb[0] + 1 -> seenimg[1] : seenimg[0])
    :: else -> skip
    fi;
#endif
    j = 0; v = 0; img = 0; pick = NONE; sb[0] = 0; sb[1] = 0; seen[0] = 0; seen[1] = 0; seenimg[0] = 0; seenimg[1] = 0; ns = 0
  };
  if
  :: mine != 0 ->                                                    /* held: the ADD answers it, writes nothing */
     a = mine - 1; mine = 0; hv = 0; himg = 0; hpick = 0; unclaimed = NONE;
     answer(p, a); goto l_added
  :: mine == 0 && p != 0 -> handed = 1; unclaimed = NONE
  :: mine == 0 && p == 0 && unclaimed == NONE -> goto l_addfail      /* RangeExhaustedError: not retried */
  :: mine == 0 && p == 0 && unclaimed != NONE ->
     affWrite(unclaimed, node); CP;                                  /* claimed, lost to another node, or unknown: */
#ifdef BROKEN_GIVEUP
     unclaimed = NONE; res = 0; goto l_addfail;                      /* ... answered "exhausted" instead */
#endif
     unclaimed = NONE; res = 0; goto l_choose                        /* plan again from a fresh view */
  fi;

l_alloc:    /* createIpam allocateOne / probeAndWrite: the inner withConflictRetry */
  attempt = 0;
l_attempt:
  avoid = 0;
l_probe:
  if
  :: handed -> v = hv; img = himg; pick = hpick; mine = 0; handed = 0; hv = 0; himg = 0; hpick = 0
  :: else -> readPool(p, v, img, pick, avoid, key, mine); CP
  fi;
  judge();                                                           /* what an earlier attempt owes, against this read */
  if :: jres == UNK -> goto l_retry :: else -> skip fi;
  if
  :: mine != 0 -> a = mine - 1; mine = 0; answer(p, a); v = 0; img = 0; pick = NONE; settle(); goto l_added   /* reused: the key is here */
  :: mine == 0 && pick == NONE -> goto l_exhausted                   /* RangeExhaustedError */
  :: else -> skip
  fi;

l_claim:    /* claimThenWrite: claimAddress (create; else read and judge the claim there), then the pool write at the version read */
  owForget(pick);
  claimWrite(pick, p, key, 0); CP;
  created = (res == OK);
  if
  :: res == UNK -> owAdd(pick, UNKV, key); goto l_retry              /* ours if the next read finds it naming this entry */
  :: res == OK -> skip
  :: res == CONFLICT ->
     claimRead(pick); CP;
     if
     :: rp == 0 -> claimWrite(pick, p, key, 0); CP; created = (res == OK)
     :: rp == p -> claimWrite(pick, p, key, rv); CP                  /* dangling as of our read: our pool write fences */
     :: rp != 0 && rp != p ->
        readImage(rp, ov, oimg); CP;
        if
        :: SLOT(oimg, rp, pick) != 0 -> avoid = avoid | (1 << pick); rp = 0; rk = 0; rv = 0; ov = 0; oimg = 0; goto l_probe   /* taken */
        :: else -> skip
        fi;
#ifndef BROKEN_NOFENCE
        poolWrite(rp, ov, oimg, 0, 0, 0, 0); CP;                     /* fence the other pool */
        if :: res != OK -> rp = 0; rk = 0; rv = 0; ov = 0; oimg = 0; goto l_claimfail :: else -> skip fi;
#endif
        claimWrite(pick, p, key, rv); CP
     fi;
     rp = 0; rk = 0; rv = 0; ov = 0; oimg = 0;
     if :: res != OK -> goto l_claimfail :: else -> skip fi
  fi;
l_write:
  applyFences();                                                     /* the pool write places the key: fenced first */
  if
  :: ok -> poolWrite(p, v, WITH(img, p, pick, key), 0, 0, key, pick); CP
  :: else -> broken = 1                                              /* FenceBrokenError: nothing written */
  fi;
  if
  :: ok && res == OK ->
     cv = 0; v = 0; img = 0; pick = NONE; created = 0;
     fenced();                                                       /* this write was the owed claims' fence */
     settle();
     goto l_added
  :: else ->                                                         /* the claim goes (created from nothing), or is owed */
     if
     :: !broken && res == UNK -> owAdd(pick, cv, key)
     :: (broken || res != UNK) && created -> dropSettled(pick, cv, 0)
     :: (broken || res != UNK) && !created -> owAdd(pick, cv, key)
     fi;
     cv = 0; created = 0;
     if :: broken -> broken = 0; goto l_exhausted :: else -> goto l_retry fi   /* FenceBrokenError: plan again from fresh reads */
  fi;
l_claimfail:  /* claimAddress failed: a conflict (nothing owed), or an unknown outcome (its claim owed as unknown) */
  if :: res == UNK -> owAdd(pick, UNKV, key) :: else -> skip fi;
  cv = 0; created = 0;
l_retry:    /* a conflict or an unknown outcome: the attempt runs again */
  attempt++; v = 0; img = 0; pick = NONE;
  if :: attempt < ATRY -> goto l_attempt :: else -> goto l_exhausted fi;

l_exhausted:  /* RangeExhaustedError, retries exhausted or FenceBrokenError: settle, then (blocks) plan again */
  settle(); pick = NONE; attempt = 0; avoid = 0; fp = 0; fv = 0; fimg = 0; fu = 0;
  if
  :: !plain && replans + 1 < ATRY -> replans++; p = 0; goto l_choose
  :: else -> goto l_addfail
  fi;

l_addfail:    /* the ADD answered an error: the runtime DELs; alone and with a free address, that is a progress failure */
  skip;
  d_step {
    assert(((calm >> me) & 1) == 0 || !(FREE(0) || FREE(1) || FREE(2) || (!plain && FREE(3))));
    p = 0; attempt = 0; avoid = 0; replans = 0; created = 0; fp = 0; fv = 0; fimg = 0; fu = 0; keep = 0
  };
  goto l_del;

l_added:
  p = 0; a = 0; attempt = 0; avoid = 0; replans = 0; created = 0; fp = 0; fv = 0; fimg = 0; fu = 0;
  if
  :: readd -> goto l_done                                            /* ADDed again after its DEL: it stays */
  :: !readd && me <= MAYDEL -> goto l_del
#ifdef READD
  :: !readd && me == 1 -> keep = 1; goto l_del                       /* DEL, its pod staying, then ADD again */
#endif
  :: true -> goto l_done
  fi;

l_del:        /* DEL: exact key; block IPAM release (holding), then createIpam releaseWhere */
  skip;
  d_step {
    if
    :: keep -> printf("MSC: @%d del kept\n", me)
    :: else -> printf("MSC: @%d del\n", me); alive[key] = 0; gone[key] = 1
    fi;
    added[key] = 0; indel = 1
  };
  if :: plain -> p = 3; goto l_release :: else -> skip fi;
  again = 0;
l_search:     /* holding: every searched block read; the one holding the key handed on */
  skip;
  view(); CP;
  found = 0; j = 0;
  do
  :: j < ns ->
     readPool(sb[j] + 1, v, img, pick, 0, key, mine); CP;
     if :: mine != 0 && found == 0 -> found = sb[j] + 1; hv = v; himg = img :: else -> skip fi;
     j++
  :: else -> break
  od;
  j = 0; sb[0] = 0; sb[1] = 0; ns = 0; unclaimed = NONE; v = 0; img = 0; pick = NONE; mine = 0;
  if :: found == 0 -> goto l_done :: else -> skip fi;
  p = found; handed = 1;
l_release:    /* releaseWhere: the key's reservation out of the pool as read; its claim read first, deleted after */
  attempt = 0; us = 0; rel = 0; has = 0; failed = 0; stale = 0;
  do
  :: if
     :: handed -> v = hv; img = himg; handed = 0; hv = 0; himg = 0
     :: else -> readImage(p, v, img); CP
     fi;
     d_step {
       a = NONE; sci = PFIRST(p);
       do :: sci <= PLAST(p) -> if :: SLOT(img, p, sci) == key -> a = sci :: else -> skip fi; sci++ :: else -> break od; sci = 0;
#ifdef BROKEN_STALE
       if :: stale -> a = sa; img = simg :: else -> skip fi                  /* the first decision, kept */
#endif
     };
     if
     :: a == NONE ->
        if :: us -> rel = 1; a = ua; has = uhas; cv = ucv :: else -> skip fi;   /* landed: the write of unknown outcome released it */
        break
     :: else -> skip
     fi;
     d_step { printf("MSC: @%d readClaim %d\n", me, a); has = (cpool[a] == p); cv = cver[a] };   /* ownClaimVersions */
     CP;
     d_step { sa = a; simg = (SLOT(img, p, a) == key -> WITH(img, p, a, 0) : img) };
     poolWrite(p, v, WITH(img, p, a, 0), 1 << a, key, 0, 0); CP;
     if
     :: res == OK -> rel = 1; break
     :: res == UNK -> us = 1; ua = a; uhas = has; ucv = cv
     :: res == CONFLICT -> us = 0
     fi;
#ifdef BROKEN_STALE
     stale = 1;
#endif
     has = 0; cv = 0; attempt++;
     if :: attempt >= ATRY -> failed = 1; break :: else -> skip fi   /* DEL failed: the reconciler's */
  od;
  us = 0; ua = 0; uhas = 0; ucv = 0; sa = 0; simg = 0; stale = 0; v = 0; img = 0;
  if
  :: rel && has ->
     dropSettled(a, cv, DELANY);                                       /* dropClaim at the version read */
     if :: res == CONFLICT -> rexp = 0; rwrote = 0; rnp = p; rnk = key; repairClaim(a, 0) :: else -> skip fi
  :: else -> skip
  fi;
  /* a block release that found nothing more to release (the key moved): the blocks searched afresh, once */
  if :: !plain && !rel && !failed && again == 0 -> again = 1; rel = 0; has = 0; a = 0; cv = 0; res = 0; p = 0; goto l_search :: else -> skip fi;
  if
  :: keep -> d_step { keep = 0; readd = 1; indel = 0; rel = 0; has = 0; failed = 0; again = 0; found = 0; a = 0; cv = 0; res = 0; p = 0 }; goto l_add
  :: else -> goto l_done
  fi;

crashed:
  skip;
  d_step { printf("MSC: @%d crash\n", me); alive[key] = 0; gone[key] = 1 };
l_done:   /* nothing of this call is kept: its locals cleared, so that equal stores make equal states */
  skip;
  d_step {
    if :: me == 1 -> fin1 = 1 :: else -> skip fi;
    me = 0; i = 0; j = 0; q = 0; s = 0; t = 0; h = 0; v = 0; img = 0; pick = 0; mine = 0; avoid = 0; hv = 0; himg = 0; hpick = 0;
    p = 0; a = 0; attempt = 0; replans = 0; cv = 0; rp = 0; rk = 0; rv = 0; ov = 0; oimg = 0; res = 0; nv = 0; jres = 0;
    fp = 0; fv = 0; fimg = 0; fu = 0; unclaimed = 0; ns = 0; found = 0; ua = 0; ucv = 0; sa = 0; simg = 0;
    rtries = 0; rexp = 0; rup = 0; ruk = 0; rnp = 0; rnk = 0; hp = 0; hk = 0; nheld = 0; nowed = 0;
    sb[0] = 0; sb[1] = 0; seen[0] = 0; seen[1] = 0; seenimg[0] = 0; seenimg[1] = 0;
    sci = 0; do :: sci < 4 -> rdv[sci] = 0; rdi[sci] = 0; sci++ :: else -> break od;
    sci = 0; do :: sci < ATRY -> owA[sci] = 0; owV[sci] = 0; owK[sci] = 0; owF[sci] = 0; sci++ :: else -> break od; sci = 0;
    ok = 0; created = 0; handed = 0; has = 0; rel = 0; us = 0; uhas = 0; failed = 0; again = 0; keep = 0; readd = 0; broken = 0;
    stale = 0; indel = 0; rwrote = 0; rrew = 0; runs = 0; mayCrash = 0;
    finished++
  }
}

/* ---- the reconciler: observe pools, list pods, re-read orphans' pods, release them conditionally, audit claims ---- */

proctype Reconciler()
{
  byte me, i, j, q, p, a, b, v, k, n, cv, rp, rk, rv, res, nv, img, passes, attempt, cands, lst, lc, pods, asked, rel, has, srel, simg;
  byte rtries, rexp, rup, ruk, rnp, rnk, rq, rc, hp, hk, nheld;
  short orph, conf, released, urel;
  byte ov[4]; byte oimg[4]; byte ob[4]; byte obp[4]; byte cvs[4]; byte sp[4]; byte sk[4]; byte sv[4]; byte puid[4]; byte rdv[4]; byte rdi[4];
  bool ok, final, fix, us, stale, indel, rwrote, rrew, runs, mayCrash;

  me = 3; mayCrash = (crasher == 3);
#define BIT(p,a) (1 << (((p) - 1) * 4 + (a)))

top:
  if
  :: passes < NPASS -> passes++
  :: finished == nact -> final = 1; mayCrash = 0; unk = 0
  fi;
  d_step {
    printf("MSC: @3 pass\n");
#ifdef BROKEN_PODSFIRST
    pods = ALIVEMASK                                          /* the pods as they are before the pools are read */
#endif
  };
r_observe:  /* observePools: the pools listed, then each read, one after the other in listing order */
  skip;
  d_step { printf("MSC: @3 listPools\n"); lst = (pver[1] > 0 -> 2 : 0) | (pver[2] > 0 -> 4 : 0) | (pver[3] > 0 -> 8 : 0) };
  CP;
  q = 0;
  do
  :: q < npools ->
     if
     :: (lst >> POOLAT(q)) & 1 ->
        d_step {
          p = POOLAT(q); printf("MSC: @3 readPool %d\n", p); ov[p] = pver[p]; imageOf(p, oimg[p]);
          a = PFIRST(p);
          do :: a <= PLAST(p) -> if :: H(p, a) != 0 -> ob[a] = H(p, a); obp[a] = p :: else -> skip fi; a++ :: else -> break od;
          a = 0; p = 0
        };
        CP
     :: else -> skip
     fi;
     q++
  :: else -> break
  od;
  q = 0;
r_judge:    /* the pods listed after the pools were read; orphans (no pod of that name and UID) re-read once per pod */
  skip;
  d_step {
    printf("MSC: @3 listPods\n");
#ifndef BROKEN_PODSFIRST
    pods = ALIVEMASK;
#endif
    orph = 0; q = 0;
    do
    :: q < npools ->
       p = POOLAT(q);
       if
       :: (lst >> p) & 1 ->
          a = PFIRST(p);
          do :: a <= PLAST(p) -> if :: SLOT(oimg[p], p, a) != 0 && ((pods >> SLOT(oimg[p], p, a)) & 1) == 0 -> orph = orph | BIT(p, a) :: else -> skip fi; a++
             :: else -> break od;
          a = 0
       :: else -> skip
       fi;
       q++
    :: else -> break
    od;
    q = 0; p = 0
  };
  CP;
  /* revalidate: each orphan's pod read again (in the orphans' order, once per pod name) */
  conf = 0; asked = 0; q = 0;
  do
  :: q < npools ->
     p = POOLAT(q); a = PFIRST(p);
     do
     :: a <= PLAST(p) ->
        if
        :: (orph & BIT(p, a)) != 0 && ((asked >> podOf[SLOT(oimg[p], p, a)]) & 1) == 0 ->
           d_step {
             n = podOf[SLOT(oimg[p], p, a)]; asked = asked | (1 << n);
             printf("MSC: @3 getPod %d\n", n);
             /* the pod of that name now: the key (UID) alive under it, 0: none */
             puid[n] = 0; k = 1;
#ifdef BROKEN_PODSFIRST
             do :: k < 4 -> if :: podOf[k] == n && ((pods >> k) & 1) -> puid[n] = k :: else -> skip fi; k++ :: else -> break od;
#else
             do :: k < 4 -> if :: podOf[k] == n && alive[k] -> puid[n] = k :: else -> skip fi; k++ :: else -> break od;
#endif
             k = 0; n = 0
           };
           CP
        :: else -> skip
        fi;
        if :: (orph & BIT(p, a)) != 0 && puid[podOf[SLOT(oimg[p], p, a)]] != SLOT(oimg[p], p, a) -> conf = conf | BIT(p, a) :: else -> skip fi;
        a++
     :: else -> break
     od;
     q++
  :: else -> break
  od;
  q = 0; a = 0; p = 0; asked = 0; orph = 0;
  d_step { i = 0; do :: i < 4 -> puid[i] = 0; i++ :: else -> break od; i = 0 };
r_release:  /* releaseAllIf per pool, in listing order: from the pool as observed (handed on), a fresh read on conflict */
  released = 0; q = 0;
  do
  :: q < npools ->
     p = POOLAT(q);
     if
     :: (conf & (BIT(p, 0) | BIT(p, 1) | BIT(p, 2) | BIT(p, 3))) != 0 ->
        attempt = 0; us = 0; ok = 0; stale = 0; urel = 0;
        do
        :: if
           :: attempt == 0 -> v = ov[p]; img = oimg[p]
           :: else -> readImage(p, v, img); CP
           fi;
           /* releaseUnchanged: each confirmed orphan's reservation, at its offset, unchanged since observed */
           d_step {
             rel = 0; a = PFIRST(p);
             do
             :: a <= PLAST(p) ->
                if
                :: (conf & BIT(p, a)) != 0 ->
#ifdef BROKEN_PODREF
                   /* by pod name: the last reservation (by address) of the observed entry's pod name */
                   b = PFIRST(p); k = NONE;
                   do
                   :: b <= PLAST(p) -> if :: SLOT(img, p, b) != 0 && podOf[SLOT(img, p, b)] == podOf[SLOT(oimg[p], p, a)] -> k = b :: else -> skip fi; b++
                   :: else -> break
                   od;
                   if :: k != NONE -> rel = rel | (1 << k) :: else -> skip fi; b = 0; k = 0
#else
                   if :: SLOT(img, p, a) == SLOT(oimg[p], p, a) -> rel = rel | (1 << a) :: else -> skip fi
#endif
                :: else -> skip
                fi;
                a++
             :: else -> break
             od;
             a = 0;
#ifdef BROKEN_STALE
             if :: stale -> rel = srel; img = simg :: else -> skip fi     /* the first decision, kept */
#endif
           };
           if
           :: rel == 0 ->
              /* landed: what the write of unknown outcome released and the pool no longer holds was released */
              d_step {
                if
                :: us ->
                   a = PFIRST(p);
                   do
                   :: a <= PLAST(p) ->
                      if :: (urel & (1 << a)) != 0 && SLOT(img, p, a) == SLOT(oimg[p], p, a) -> urel = urel & ~(1 << a) :: else -> skip fi; a++
                   :: else -> break
                   od;
                   a = 0; rel = urel; has = has & rel; ok = (rel != 0)
                :: else -> skip
                fi
              };
              break
           :: else -> skip
           fi;
           /* ownClaimVersions: the released addresses' claims, read together (one: readClaim; more: readClaims) */
           d_step {
             if
             :: rel == 1 || rel == 2 || rel == 4 || rel == 8 ->
                a = (rel == 1 -> 0 : (rel == 2 -> 1 : (rel == 4 -> 2 : 3))); printf("MSC: @3 readClaim %d\n", a); a = 0
             :: else -> printf("MSC: @3 readClaims %d\n", rel)
             fi;
             has = 0; a = 0;
             do :: a < 4 -> if :: ((rel >> a) & 1) && cpool[a] == p -> has = has | (1 << a); cvs[a] = cver[a] :: else -> cvs[a] = 0 fi; a++ :: else -> break od;
             a = 0;
             /* the pool with them taken out */
             simg = img; a = PFIRST(p);
             do :: a <= PLAST(p) -> if :: (rel >> a) & 1 -> simg = WITH(simg, p, a, 0) :: else -> skip fi; a++ :: else -> break od;
             a = 0; srel = rel
           };
           CP;
           poolWrite(p, v, simg, rel, 0, 0, 0); CP;
           if
           :: res == OK -> ok = 1; break
           :: res == UNK -> us = 1; urel = rel
           :: res == CONFLICT -> us = 0; urel = 0; has = 0
           fi;
#ifdef BROKEN_STALE
           stale = 1;
#endif
           rel = 0; attempt++;
           if :: attempt >= RTRY -> ok = 0; break :: else -> skip fi       /* failed: the next pass */
        od;
        if
        :: ok -> released = released | ((rel & 1 -> BIT(p, 0) : 0) | (rel & 2 -> BIT(p, 1) : 0) | (rel & 4 -> BIT(p, 2) : 0) | (rel & 8 -> BIT(p, 3) : 0))
        :: else -> has = 0
        fi;
        /* dropLater: each claim at the version read; a changed one repaired (naming the released entry) */
        a = 0;
        do
        :: a < 4 ->
           if
           :: (has >> a) & 1 ->
              dropSettled(a, cvs[a], 0);
              if :: res == CONFLICT -> rexp = 0; rwrote = 0; rnp = p; rnk = SLOT(oimg[p], p, a); repairClaim(a, 0) :: else -> skip fi
           :: else -> skip
           fi;
           cvs[a] = 0; a++
        :: else -> break
        od;
        a = 0; has = 0; rel = 0; srel = 0; simg = 0; attempt = 0; v = 0; img = 0; us = 0; urel = 0; stale = 0; ok = 0
     :: else -> skip
     fi;
     q++
  :: else -> break
  od;
  q = 0; p = 0; conf = 0;
r_audit:    /* claim audit: the claims listed and read after the pools; findings against the observation less what was released */
  skip;
  d_step {
    /* what the pass holds as observed: address -> (pool, key), the last pool in listing order winning, less the released */
    i = 0; do :: i < 4 -> ob[i] = 0; obp[i] = 0; i++ :: else -> break od; i = 0;
    q = 0;
    do
    :: q < npools ->
       p = POOLAT(q);
       if
       :: (lst >> p) & 1 ->
          a = PFIRST(p);
          do :: a <= PLAST(p) -> if :: SLOT(oimg[p], p, a) != 0 && (released & BIT(p, a)) == 0 -> ob[a] = SLOT(oimg[p], p, a); obp[a] = p :: else -> skip fi; a++
             :: else -> break od;
          a = 0
       :: else -> skip
       fi;
       q++
    :: else -> break
    od;
    q = 0; p = 0;
    printf("MSC: @3 listClaims\n"); lc = (cpool[0] != 0 -> 1 : 0) | (cpool[1] != 0 -> 2 : 0) | (cpool[2] != 0 -> 4 : 0) | (cpool[3] != 0 -> 8 : 0)
  };
  CP;
  if
  :: lc != 0 ->
     d_step {
       printf("MSC: @3 readClaims %d\n", lc);
       i = 0; do :: i < 4 -> if :: (lc >> i) & 1 -> sp[i] = cpool[i]; sk[i] = ckey[i]; sv[i] = cver[i] :: else -> skip fi; i++ :: else -> break od; i = 0
     };
     CP
  :: else -> skip
  fi;
  a = 0;
  do
  :: a < 4 ->
     /* the pools listed whose CIDR holds the address */
     cands = ((lst & 2) && INCIDR(1, a) -> 2 : 0) | ((lst & 4) && INCIDR(2, a) -> 4 : 0) | ((lst & 8) && INCIDR(3, a) -> 8 : 0);
     if
     :: sp[a] != 0 && (obp[a] == 0 || sp[a] != obp[a] || sk[a] != ob[a]) ->
        /* claim-without-entry, claim-names-other-entry: repairClaim at the version listed */
        rexp = sv[a]; rwrote = 0; rnp = 0; rnk = 0; repairClaim(a, cands)
     :: sp[a] == 0 && obp[a] != 0 ->
        /* entry-without-claim: the claim read again (absent), the pools holding the address read, restored, repaired (written) */
        claimRead(a); CP;
        fix = (rp == 0); rp = 0; rk = 0; rv = 0;
        if
        :: fix ->
           q = 0; nheld = 0;
           do
           :: q < npools ->
              if
              :: (cands >> POOLAT(q)) & 1 ->
                 d_step {
                   printf("MSC: @3 readPool %d\n", POOLAT(q));
                   if :: H(POOLAT(q), a) != 0 -> nheld++; if :: !(POOLAT(q) == obp[a] && H(POOLAT(q), a) == ob[a]) -> fix = 0 :: else -> skip fi :: else -> skip fi
                 };
                 CP
              :: else -> skip
              fi;
              q++
           :: else -> break
           od;
           if :: nheld != 1 -> fix = 0 :: else -> skip fi;
           q = 0; nheld = 0
        :: else -> skip
        fi;
        if
        :: fix -> claimWrite(a, obp[a], ob[a], 0); CP;
           if :: res == OK -> rexp = cv; rwrote = 1; rnp = 0; rnk = 0; repairClaim(a, cands) :: else -> skip fi   /* changed, or failed */
        :: else -> skip
        fi;
        fix = 0; cv = 0; res = 0
     :: else -> skip
     fi;
     cands = 0; a++
  :: else -> break
  od;
  goto passend;

crashed:    /* the reconciler died mid-pass: it restarts with a new pass */
  skip;
  d_step { printf("MSC: @3 crash\n") };
passend:
  skip;
  d_step {
    i = 0;
    do
    :: i < 4 -> ov[i] = 0; oimg[i] = 0; ob[i] = 0; obp[i] = 0; cvs[i] = 0; sp[i] = 0; sk[i] = 0; sv[i] = 0; puid[i] = 0; rdv[i] = 0; rdi[i] = 0; i++
    :: else -> break
    od;
    i = 0; j = 0; q = 0; p = 0; a = 0; b = 0; v = 0; k = 0; n = 0; cv = 0; rp = 0; rk = 0; rv = 0; res = 0; nv = 0; img = 0;
    attempt = 0; cands = 0; lst = 0; lc = 0; pods = 0; asked = 0; rel = 0; has = 0; srel = 0; simg = 0;
    rtries = 0; rexp = 0; rup = 0; ruk = 0; rnp = 0; rnk = 0; hp = 0; hk = 0; nheld = 0;
    orph = 0; conf = 0; released = 0; urel = 0; ok = 0; fix = 0; us = 0; stale = 0; rwrote = 0; rrew = 0; runs = 0
  };
  if :: !final -> goto top :: else -> skip fi;
r_end:
  /* every actor finished and a pass ran after them: nothing left that no live attachment owns */
  d_step {
    printf("MSC: @3 end\n");
    a = 0;
    do
    :: a < 4 ->
       assert(cpool[a] == 0 || H(cpool[a], a) == ckey[a]);      /* no claim left that no entry backs */
       p = 1;
       do
       :: p <= npools ->
          if
          :: INPOOL(p, a) && H(p, a) != 0 ->
             assert(alive[H(p, a)]);                             /* no entry of a dead attachment */
             assert(cpool[a] == p && ckey[a] == H(p, a))         /* every entry has its claim */
          :: else -> skip
          fi;
          p++
       :: else -> break
       od;
       a++
    :: else -> break
    od;
    a = 0; p = 0
  }
}

/* The invariant between any two steps: an answered reservation of a live attachment is still there, and its claim names its pool. */
active proctype Monitor()
{
end: atomic { BAD -> assert(!BAD) }
}

init {
  atomic {
    unk = UNKNOWN;
#if CRASH
    /* no crash at all is every run of these in which the crash point is passed over */
#if NPASS > 0
    if :: crasher = 1 :: crasher = 2 :: crasher = 3 fi;
#else
    if :: crasher = 1 :: crasher = 2 fi;     /* the reconciler's last pass never crashes */
#endif
#endif
    podOf[1] = 1; podOf[2] = 2; podOf[3] = 3;
#ifdef REBORN
    podOf[2] = 1;                  /* key 2: key 1's pod reborn (same name, another UID) */
#endif
#if defined(SAME_KEY)
    mode = 4;
    /*
     * Node 1 owns block 0, filled before: a dead sandbox's entry (key 3, which the reconciler
     * frees) at a0 and a live attachment's (key 2, watched by the monitor) at a1, with their
     * claims; block 1 unclaimed. Key 1's pod exists: both ADDs are of its one attachment.
     */
    aff[0] = 1;
    pver[1] = 1; H(1, 0) = 3; H(1, 1) = 2;
    cpool[0] = 1; ckey[0] = 3; cver[0] = 1;
    cpool[1] = 1; ckey[1] = 2; cver[1] = 1;
    alive[1] = 1; alive[2] = 1; added[2] = 1; gotP[2] = 1; gotA[2] = 1; gone[3] = 1;
    npools = 2; nact = 2;
    printf("MSC: @0 mode %d\n", mode);
    run Allocator(1, 1, 1, 0);     /* the agent */
    run Allocator(2, 1, 1, 0);     /* the binary in direct mode, called for the same attachment at once */
#else
    /* node 3 died: block 1 is its, and it held a2 for key 3, with its claim */
    aff[1] = 3;
    pver[2] = 1; H(2, 2) = 3;
    cpool[2] = 2; ckey[2] = 3; cver[2] = 1;
    gone[3] = 1;
#if defined(TWO_NODES)
    mode = 1;
#elif defined(SAME_NODE)
    mode = 2;
#elif defined(OVERLAP)
    mode = 3;
#elif defined(NO_OVERLAP)
    if :: mode = 1 :: mode = 2 fi;
#else
    if :: mode = 1 :: mode = 2 :: mode = 3 fi;
#endif
    npools = (mode == 3 -> 3 : 2);
    printf("MSC: @0 mode %d\n", mode);
    run Allocator(1, 1, 1, 0);
#ifdef ALONE
    nact = 1;
#else
    nact = 2;
    if
    :: mode == 1 -> run Allocator(2, 2, 2, 0)     /* node 2: claims block 0 first, or borrows */
    :: mode == 2 -> run Allocator(2, 1, 2, 0)     /* the binary in direct mode beside the agent, same node */
    :: mode == 3 -> run Allocator(2, 0, 2, 1)     /* a direct writer of the overlapping plain pool */
    fi;
#endif
#endif
    run Reconciler()
  }
}

/*
 * ipamkit's allocation protocol as the code implements it (packages/core/DESIGN.md, "Protocol
 * model", maps every step below to its TypeScript function). Checked exhaustively by spin:
 * packages/core/src/protocol-model.test.ts.
 *
 * Stores: pools, overlapping-range claims and block-affinity claims, each record with a version
 * that changes on every write (never given again) and compare-and-swap writes. One store request
 * is one atomic step (d_step); an actor may crash between any two of its steps (CP).
 *
 * Address space: 4 addresses a0..a3 of one network; 2 blocks of 2 (pool 1 = block 0 = a0,a1;
 * pool 2 = block 1 = a2,a3), and pool 3, a plain range overlapping a0..a2 (OVERLAP only).
 * Initially block 1 is claimed by node 3, which died holding a2 for key 3 (its claim too).
 *
 * Configurations, the first three in one run unless one is named (-D): TWO_NODES (allocators on
 * nodes 1 and 2: node 2 claims block 0 or borrows), SAME_NODE (the agent and the binary in direct
 * mode on node 1), OVERLAP (node 1's agent beside a direct writer of the overlapping plain pool);
 * NO_OVERLAP: the first two. SAME_KEY (only when named): the agent and the binary in direct mode
 * on node 1 called for ONE attachment at once (both key 1); node 1 owns block 0, full with a dead
 * sandbox's entry (key 3) and a live attachment's (key 2), block 1 unclaimed — one ADD may claim
 * block 1 while the other finds room in block 0 once the reconciler frees key 3's address.
 * Scope: CRASH, NPASS, MAYDEL, MAXTRY, MAXREPLAN (below).
 *
 * An ADD in block mode plans again from fresh reads after claiming a block, after a block filled
 * meanwhile, and when its retries run out. In SAME_KEY (FENCED, below) it also fences its choice
 * as block-commit.ts does on stores without entry-level commits: before each write placing its
 * key, the other searched block is touched at the version the choice saw, or the first unclaimed
 * block's affinity claim is read and must be absent; a broken fence plans again.
 *
 * Deliberately broken variants: BROKEN_PODREF (the reconciler releases an entry of the same pod
 * name, not the one it observed: Whereabouts#176), BROKEN_BLIND (pool writes ignore the version),
 * BROKEN_NOFENCE (a dangling claim of another pool is taken over without fencing that pool),
 * BROKEN_NOTOUCH (an ADD's choice is not fenced: no touch, no claim check).
 */

#ifndef CRASH
#define CRASH 1      /* 1: one actor, any of the three, may crash once, at any point; 0: none */
#endif
#ifndef MAXTRY
#define MAXTRY 2     /* withConflictRetry attempts */
#endif
#ifndef MAXREPLAN
#define MAXREPLAN 2  /* createNodeBlockIpam re-plans (allocate's withConflictRetry; chooseBlock's lost claims) */
#endif
#ifndef NPASS
#define NPASS 1      /* reconciler passes concurrent with the allocators (one more after them) */
#endif
#ifndef MAYDEL
#define MAYDEL 2     /* allocators (actors 1..MAYDEL) that may DEL their attachment after the ADD; the others stay */
#endif

#define NONE 255
#define NACT 2

/*
 * The fences of an ADD's choice are applied in SAME_KEY, the configuration they exist for (and
 * with -DFENCE_ALL in the others). With distinct keys a touch changes no content and only adds
 * version bumps; applying them there multiplies the state space about 18-fold (two allocators of
 * one node, no crash, no concurrent pass: 10 731 states without, 195 551 with), beyond the CI
 * budget.
 */
#if (defined(SAME_KEY) || defined(FENCE_ALL)) && !defined(BROKEN_NOTOUCH)
#define FENCED
#endif

/* ---- the configuration: 1 TWO_NODES, 2 SAME_NODE, 3 OVERLAP (chosen by init: one run covers all three); 4 SAME_KEY (alone) ---- */
byte mode;
byte npools;                /* pools that may exist: the blocks, and in OVERLAP the plain pool */
#define NPOOLS npools

/* ---- the stores ---- */
byte pver[4];               /* pool version; 0: the pool does not exist */
byte hold[16];              /* H(p,a): the key holding address a in pool p; 0: free */
#define H(p,a) hold[(p)*4+(a)]
#define PFIRST(p) ((p)==2 -> 2 : 0)
#define PLAST(p)  ((p)==1 -> 1 : ((p)==2 -> 3 : 2))
#define INPOOL(p,a) ((a) >= PFIRST(p) && (a) <= PLAST(p))
byte cver[4];               /* overlapping-range claim of address a: version (never reused) */
byte cpool[4];              /* the pool it names; 0: no claim */
byte ckey[4];               /* the key it names */
byte aff[2];                /* affinity claim of block b: the node; 0: unclaimed (never deleted) */
#define ORD(n,j) ((n)==2 -> 1-(j) : (j))   /* node 2 visits block 1 first */

/* ---- the world ---- */
bool alive[4];              /* key k's attachment is alive (its pod runs it); from the start until a DEL or crash of an ADD of it */
bool added[4];              /* an ADD of key k answered a reservation (wrote it, or found it) */
byte gotP[4]; byte gotA[4]; /* where (the last answer; a live attachment's answers are one address) */
byte podOf[4];              /* key -> pod name */
byte crasher;               /* the actor that may crash (1, 2: allocators; 3: the reconciler; 0: none) */
byte finished;

/* A reservation answered to a live attachment is still in the store (no write lost it, nobody freed it). */
#define LOST(k) (added[k] && alive[k] && H(gotP[k], gotA[k]) != k)

/*
 * A crash point: the actor may die here (its attachment is then dead); never in the reconciler's
 * last pass. `mayCrash` is a local copy of (crasher == this actor), so a crash point is a local
 * choice that partial-order reduction does not interleave.
 */
#define CP if :: mayCrash -> mayCrash = 0; printf("MSC: actor %d crashed\n", me); goto crashed :: true -> skip fi
#define RCP CP

/* ---- store requests: one atomic step each ---- */

/* readPool: version, the lowest free address (Allocation "lowest-free") outside `avoid`, and 1 + the address key k holds (0: none) */
inline readPool(p, v, pick, avoid, k, held) {
  d_step {
    v = pver[p]; pick = NONE; held = 0; i = PFIRST(p);
    do
    :: i <= PLAST(p) ->
       if
       :: H(p,i) == 0 && pick == NONE && ((avoid >> i) & 1) == 0 -> pick = i
       :: else -> skip
       fi;
       if :: H(p,i) == k -> held = i + 1 :: else -> skip fi; i++
    :: else -> break
    od; i = 0
  }
}

/* writePool with one entry added, at version v. Asserts that no address is held by two keys and no key holds two addresses. */
inline poolAdd(p, v, a, k, ok) {
  d_step {
#ifdef BROKEN_BLIND
    if :: true ->
#else
    if :: pver[p] == v ->
#endif
       printf("MSC: key %d reserved a%d in pool %d\n", k, a, p);
       assert(H(p,a) == 0);                               /* no write loses a concurrent writer's reservation */
       assert(!(INPOOL(1,a) && H(1,a) != 0) && !(INPOOL(2,a) && H(2,a) != 0) && !(INPOOL(3,a) && H(3,a) != 0)); /* no address held twice */
       i = 0;
       do :: i < 16 -> assert(hold[i] != k); i++ :: else -> break od; i = 0;   /* no key with two addresses */
       H(p,a) = k; pver[p]++; ok = 1; added[k] = 1; gotP[k] = p; gotA[k] = a
    :: else -> ok = 0
    fi
  }
}

/* writePool unchanged at v (creates it empty when v = 0): the fence */
inline poolFence(p, v, ok) {
  d_step { if :: pver[p] == v -> pver[p]++; ok = 1 :: else -> ok = 0 fi }
}

inline claimRead(a, rp, rk, rv) { d_step { rp = cpool[a]; rk = ckey[a]; rv = cver[a] } }

inline claimCreate(a, p, k, ok, cv) {
  d_step { if :: cpool[a] == 0 -> cpool[a] = p; ckey[a] = k; cver[a]++; cv = cver[a]; ok = 1 :: else -> ok = 0 fi }
}

inline claimCas(a, p, k, ev, ok, cv) {
  d_step { if :: cpool[a] != 0 && cver[a] == ev -> cpool[a] = p; ckey[a] = k; cver[a]++; cv = cver[a]; ok = 1 :: else -> ok = 0 fi }
}

inline claimDelete(a, ev, ok) {
  d_step { if :: cpool[a] != 0 && cver[a] == ev -> cpool[a] = 0; ckey[a] = 0; cver[a]++; ok = 1 :: else -> ok = 0 fi }
}

/*
 * repairClaim (claim-repair.ts): make the claim of address a match the pools as read now, fenced.
 * rexp: only the claim at this version (0: as read); nP/nK: only a claim naming this pool and key
 * (0: any); cands: other pools that may hold a (bit mask); wrote: the caller just wrote it.
 */
inline repairClaim(a, rexp, nP, nK, cands, wrote) {
  rtries = 0;
  do
  :: claimRead(a, rp, rk, rv); CP;
     if
     :: rp == 0 -> break                                        /* absent */
     :: rp != 0 && rexp != 0 && rv != rexp -> break             /* changed */
     :: rp != 0 && (rexp == 0 || rv == rexp) && !wrote && nP != 0 && !(rp == nP && rk == nK) -> break
     :: else -> skip
     fi;
     hp = 0; hk = 0; rhv = 0; nheld = 0;
     d_step { nv = pver[rp]; if :: H(rp,a) != 0 -> hp = rp; hk = H(rp,a); rhv = nv; nheld++ :: else -> skip fi }; CP;
     q = 1;
     do
     :: q <= NPOOLS ->
        if
        :: q != rp && ((cands >> q) & 1) && INPOOL(q,a) ->
           d_step { qv = pver[q]; if :: H(q,a) != 0 -> hp = (hp == 0 -> q : hp); hk = (hp == q -> H(q,a) : hk); rhv = (hp == q -> qv : rhv); nheld++ :: else -> skip fi; qv = 0 }; CP
        :: else -> skip
        fi; q++
     :: else -> break
     od; q = 0;
     if
     :: nheld > 1 -> break                                      /* ambiguous: an operator's */
     :: nheld <= 1 && hp != 0 && hp == rp && hk == rk ->        /* consistent */
        if :: wrote -> poolFence(hp, rhv, ok); CP :: else -> ok = 1 fi;
        if :: ok -> break :: else -> skip fi
     :: else ->
        ok = 1;
        if :: hp == 0 || hp != rp -> poolFence(rp, nv, ok); CP :: else -> skip fi;   /* the named pool first */
        if
        :: !ok -> skip                                          /* conflict: read again */
        :: ok && hp == 0 -> claimDelete(a, rv, ok); CP; break   /* deleted (or changed) */
        :: ok && hp != 0 ->
           claimCas(a, hp, hk, rv, ok, cv); CP;
           if :: !ok -> break :: else -> skip fi;               /* changed: theirs */
           rexp = cv; wrote = 1;
           poolFence(hp, rhv, ok); CP;
           if :: ok -> break :: else -> skip fi
        fi
     fi;
     rtries++;
     if :: rtries >= MAXTRY -> break :: else -> skip fi         /* retries exhausted: the next pass */
  od;
  rx = 0; rtries = 0; rp = 0; rk = 0; rv = 0; hp = 0; hk = 0; rhv = 0; nv = 0; nheld = 0; cv = 0
}

/* ---- an allocator: one attachment's ADD, then maybe its DEL ---- */


/* OwedClaims.judge: each owed claim against the pool as just read (ohold) */
inline judge() {
  j = 0;
  do
  :: j < 4 ->
     if
     :: owedV[j] != 0 && ohold[j] == 0 -> owedFree = owedFree | (1 << j)
     :: owedV[j] != 0 && ohold[j] != 0 ->
        owedFree = owedFree & ~(1 << j);
        if
        :: owedK[j] != ohold[j] ->
           claimCas(j, p, ohold[j], owedV[j], ok, cv); CP;
           if :: ok -> owedV[j] = cv; owedK[j] = ohold[j] :: else -> owedV[j] = 0; owedK[j] = 0 fi
        :: else -> skip
        fi
     :: else -> skip
     fi; ohold[j] = 0; j++
  :: else -> break
  od; j = 0; cv = 0
}

/* OwedClaims.fenced: the pool write at the version judged against was the fence; delete the free ones */
inline fenced() {
  j = 0;
  do
  :: j < 4 ->
     if
     :: owedV[j] != 0 && ((owedFree >> j) & 1) -> claimDelete(j, owedV[j], ok); CP
     :: else -> skip
     fi; owedV[j] = 0; owedK[j] = 0; j++
  :: else -> break
  od; j = 0; owedFree = 0
}

/*
 * The call's fences, before each write that places the key (block-commit.ts touchedFences): the
 * other searched block (fp) touched, written onto itself at the version the choice saw (fv; it
 * is created empty when that was 0), then at the touch's; the first unclaimed block (fu - 1) must
 * still be unclaimed, its affinity claim read afresh. ok = 0: the fence broke (FenceBrokenError),
 * nothing more is written. At most one of the two: with two blocks, a node searching two has none
 * unclaimed.
 */
inline applyFences() {
  ok = 1;
  if
  :: fp != 0 -> poolFence(fp, fv, ok); CP; if :: ok -> fv++ :: else -> skip fi
  :: fu != 0 -> d_step { ok = (aff[fu - 1] == 0) }; CP
  :: else -> skip
  fi
}

/* The ADD answers address aa of pool pp without writing (the key found there). A live attachment's answers are one address. */
inline answer(pp, aa) {
  d_step {
    printf("MSC: key %d answered a%d in pool %d (held)\n", key, aa, pp);
    assert(!(added[key] && alive[key]) || (gotP[key] == pp && gotA[key] == aa));
    added[key] = 1; gotP[key] = pp; gotA[key] = aa
  }
}

/* readPool for the allocation: its version, lowest free address, 1 + the key's own address (mine; 0: none), the holders of owed addresses */
inline readForAlloc() {
  d_step {
    v = pver[p]; pick = NONE; mine = 0; i = PFIRST(p);
    do
    :: i <= PLAST(p) ->
       if :: H(p,i) == 0 && pick == NONE && ((avoid >> i) & 1) == 0 -> pick = i :: else -> skip fi;
       if :: H(p,i) == key -> mine = i + 1 :: else -> skip fi; i++
    :: else -> break
    od;
    i = 0;
    do :: i < 4 -> ohold[i] = (owedV[i] != 0 && INPOOL(p,i) -> H(p,i) : 0); i++ :: else -> break od;
    i = 0
  }
}

/* OwedClaims.settle: what is still owed when the call writes no pool of its own */
inline settle() {
  t = 0;
  do
  :: (owedV[0] | owedV[1] | owedV[2] | owedV[3]) == 0 -> break
  :: else ->
     avoid = 0; readForAlloc(); CP;
     judge();
     if
     :: (owedV[0] | owedV[1] | owedV[2] | owedV[3]) == 0 -> break
     :: else ->
        /* the pool read holds the key: its unchanged rewrite is a write placing the key, fenced first */
        if
        :: mine != 0 && (fp | fu) != 0 -> applyFences();
           if :: !ok -> break :: else -> skip fi                   /* FenceBrokenError: left for the reconciler */
        :: else -> skip
        fi;
        poolFence(p, v, ok); CP;
        if :: ok -> fenced(); break :: else -> skip fi
     fi;
     t++;
     if :: t >= MAXTRY -> break :: else -> skip fi                 /* left for the reconciler */
  od;
  t = 0; v = 0; pick = NONE; mine = 0
}

/* the node's view of blocks (createNodeBlockIpam view/searched): claims only grow, so one read */
inline view() {
  d_step {
    unclaimed = NONE; ns = 0; j = 0;
    do
    :: j < 2 && aff[ORD(node, j)] == 0 -> unclaimed = ORD(node, j); break
    :: j < 2 && aff[ORD(node, j)] == node -> sb[ns] = ORD(node, j); ns++; j++
    :: j < 2 && aff[ORD(node, j)] != 0 && aff[ORD(node, j)] != node -> j++
    :: j >= 2 -> break
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
  byte rx, i, j, q, t, v, pick, avoid, attempt, replans, p, cv, rp, rk, rv, rtries, hp, hk, rhv, nv, qv, nheld, ov, oh;
  byte hv, hpick, unclaimed, ns, found, a, owedFree, mine, fp, fv, fu;
  byte sb[2]; byte seen[2]; byte owedV[4]; byte owedK[4]; byte ohold[4];
  bool ok, created, handed, has, wrote, mayCrash, broken;

  mayCrash = (crasher == me);
  replans = 0; pick = NONE;
  if :: plain -> p = 3; goto l_alloc :: else -> skip fi;

l_choose:   /* chooseBlock + planAdd: the block holding the key, else the first with room among those searched (fenced), else claim the first unclaimed */
  view(); CP;
  p = 0; j = 0;
  do
  :: j < ns ->
     readPool(sb[j] + 1, v, pick, 0, key, mine); CP;
     if :: mine != 0 -> p = sb[j] + 1; break :: else -> skip fi;    /* held: read no further */
     if :: p == 0 && pick != NONE -> p = sb[j] + 1; hv = v; hpick = pick :: else -> skip fi;
     seen[j] = v; j++
  :: else -> break
  od;
  skip;
  d_step {
#ifdef FENCED
    /* fencesFor: the other searched block at the version seen; or the first unclaimed block */
    if
    :: mine == 0 && p != 0 && unclaimed != NONE -> fu = unclaimed + 1
    :: mine == 0 && p != 0 && ns == 2 -> fp = (p == sb[0] + 1 -> sb[1] : sb[0]) + 1; fv = (p == sb[0] + 1 -> seen[1] : seen[0])
    :: else -> skip
    fi;
#endif
    j = 0; v = 0; pick = NONE; sb[0] = 0; sb[1] = 0; seen[0] = 0; seen[1] = 0; ns = 0
  };
  if
  :: mine != 0 ->                                                    /* held: the ADD answers it, writes nothing */
     a = mine - 1; mine = 0; hv = 0; hpick = 0; unclaimed = NONE;
     answer(p, a); goto l_added
  :: mine == 0 && p != 0 -> handed = 1
  :: mine == 0 && p == 0 && unclaimed == NONE -> goto l_addfail     /* RangeExhaustedError */
  :: mine == 0 && p == 0 && unclaimed != NONE ->
     d_step { if :: aff[unclaimed] == 0 -> aff[unclaimed] = node; ok = 1 :: else -> ok = 0 fi }; CP;
     unclaimed = NONE;
     if
     :: ok -> goto l_choose                                          /* claimed: plan again from a fresh view */
     :: else -> replans++;                                           /* lost to another node */
        if :: replans >= MAXREPLAN -> goto l_addfail :: else -> goto l_choose fi
     fi
  fi;
  unclaimed = NONE;

l_alloc:    /* createIpam allocateOne / probeAndWrite */
  attempt = 0;
l_attempt:
  avoid = 0;
l_probe:
  if
  :: handed -> v = hv; pick = hpick; handed = 0; hv = 0; hpick = 0
  :: else -> readForAlloc(); CP; judge()
  fi;
  if
  :: mine != 0 -> a = mine - 1; mine = 0; answer(p, a); v = 0; pick = NONE; settle(); goto l_added   /* reused: the key is here */
  :: mine == 0 && pick == NONE -> goto l_exhausted
  :: else -> skip
  fi;
  /* claimThenWrite: claimAddress, then the pool write at the version read */
l_claim:
  owedV[pick] = 0; owedK[pick] = 0; owedFree = owedFree & ~(1 << pick);
  claimCreate(pick, p, key, ok, cv); CP;
  created = ok;
  if
  :: !ok ->
     claimRead(pick, rp, rk, rv); CP;
     if
     :: rp == 0 -> claimCreate(pick, p, key, ok, cv); CP; created = 1
     :: rp == p -> claimCas(pick, p, key, rv, ok, cv); CP            /* dangling as of our read: our pool write fences */
     :: rp != 0 && rp != p ->
        d_step { ov = pver[rp]; oh = H(rp, pick) }; CP;
        if
        :: oh != 0 -> avoid = avoid | (1 << pick); rp = 0; rk = 0; rv = 0; ov = 0; oh = 0; goto l_probe   /* taken */
        :: else -> skip
        fi;
#ifndef BROKEN_NOFENCE
        poolFence(rp, ov, ok); CP;                                   /* fence the other pool */
        if :: !ok -> rp = 0; rk = 0; rv = 0; ov = 0; goto l_conflict :: else -> skip fi;
#endif
        claimCas(pick, p, key, rv, ok, cv); CP
     fi;
     rp = 0; rk = 0; rv = 0; ov = 0; oh = 0;
     if :: !ok -> cv = 0; goto l_conflict :: else -> skip fi
  :: else -> skip
  fi;
l_write:
  skip;
  applyFences();                                                   /* the pool write places the key: fenced first */
  if
  :: ok -> poolAdd(p, v, pick, key, ok); CP
  :: else -> broken = 1                                            /* FenceBrokenError: nothing written */
  fi;
  if
  :: ok -> cv = 0; v = 0; pick = NONE;
     fenced();
     settle();
     goto l_added
  :: else ->
     if
     :: created -> claimDelete(pick, cv, ok); CP
     :: else -> owedV[pick] = cv; owedK[pick] = key                   /* taken over: owed */
     fi;
     cv = 0; created = 0;
     if :: broken -> broken = 0; v = 0; pick = NONE; goto l_exhausted :: else -> skip fi   /* plan again from fresh reads */
  fi;
l_conflict:
  attempt++; v = 0; pick = NONE;
  if :: attempt < MAXTRY -> goto l_attempt :: else -> goto l_exhausted fi;

l_exhausted:  /* RangeExhaustedError, retries exhausted (StoreConflictError) or FenceBrokenError: settle, then (blocks) plan again */
  settle(); pick = NONE; attempt = 0; avoid = 0; fp = 0; fv = 0; fu = 0;
  d_step { owedFree = 0; i = 0; do :: i < 4 -> owedV[i] = 0; owedK[i] = 0; i++ :: else -> break od; i = 0 };   /* a new call scope: what is still owed is the reconciler's */
  if
  :: !plain && replans + 1 < MAXREPLAN -> replans++; p = 0; goto l_choose
  :: else -> goto l_addfail
  fi;

l_addfail:    /* the ADD answered an error: the runtime DELs */
  p = 0; attempt = 0; avoid = 0; replans = 0; created = 0; fp = 0; fv = 0; fu = 0;
  goto l_del;

l_added:
  p = 0; a = 0; attempt = 0; avoid = 0; replans = 0; created = 0; fp = 0; fv = 0; fu = 0;
  if
  :: me <= MAYDEL -> goto l_del
  :: true -> goto l_done
  fi;

l_del:        /* DEL: exact key; block IPAM release (holding), then createIpam releaseWhere */
  alive[key] = 0;
  found = 0;
  if
  :: plain -> found = 3; handed = 0
  :: else ->
     view(); CP;
     j = 0;
     do
     :: j < ns ->
        skip;
        d_step { hv = pver[sb[j] + 1]; a = NONE; i = 0;
                 do :: i < 4 -> if :: INPOOL(sb[j] + 1, i) && H(sb[j] + 1, i) == key -> a = i :: else -> skip fi; i++ :: else -> break od; i = 0 };
        CP;
        if :: a != NONE -> found = sb[j] + 1; handed = 1; hpick = a; break :: else -> hv = 0 fi;
        j++
     :: else -> break
     od;
     j = 0; sb[0] = 0; sb[1] = 0; ns = 0; unclaimed = NONE; a = 0
  fi;
  if :: found == 0 -> goto l_done :: else -> skip fi;
  p = found; attempt = 0; has = 0;
  do
  :: if
     :: handed -> v = hv; a = hpick; handed = 0; hv = 0; hpick = 0
     :: else ->
        skip;
        d_step { v = pver[p]; a = NONE; i = 0;
                 do :: i < 4 -> if :: INPOOL(p, i) && H(p, i) == key -> a = i :: else -> skip fi; i++ :: else -> break od; i = 0 };
        CP
     fi;
     if :: a == NONE -> break :: else -> skip fi;                     /* absent */
     claimRead(a, rp, rk, rv); CP;                                     /* ownClaimVersions */
     has = (rp == p); cv = rv; rp = 0; rk = 0; rv = 0;
     d_step { if :: pver[p] == v -> printf("MSC: key %d released a%d from pool %d (DEL)\n", key, a, p); H(p, a) = 0; pver[p]++; ok = 1 :: else -> ok = 0 fi }; CP;
     if :: ok -> break :: else -> has = 0; cv = 0 fi;
     attempt++;
     if :: attempt >= MAXTRY -> a = NONE; break :: else -> skip fi   /* DEL failed: the reconciler's */
  od;
  if
  :: a != NONE && has ->
     claimDelete(a, cv, ok); CP;                                       /* dropClaim at the version read */
     if :: !ok -> wrote = 0; rx = 0; repairClaim(a, rx, p, key, 0, wrote) :: else -> skip fi
  :: else -> skip
  fi;
  goto l_done;

crashed:
  alive[key] = 0;
l_done:   /* nothing of this call is kept: its locals cleared, so that equal stores make equal states */
  skip;
  d_step {
    me = 0; rx = 0; i = 0; j = 0; q = 0; t = 0; v = 0; pick = 0; avoid = 0; attempt = 0; replans = 0; p = 0; cv = 0;
    rp = 0; rk = 0; rv = 0; rtries = 0; hp = 0; hk = 0; rhv = 0; nv = 0; qv = 0; nheld = 0; ov = 0; oh = 0;
    hv = 0; hpick = 0; unclaimed = 0; ns = 0; found = 0; a = 0; owedFree = 0; sb[0] = 0; sb[1] = 0;
    mine = 0; fp = 0; fv = 0; fu = 0; seen[0] = 0; seen[1] = 0;
    i = 0; do :: i < 4 -> owedV[i] = 0; owedK[i] = 0; ohold[i] = 0; i++ :: else -> break od; i = 0;
    ok = 0; created = 0; handed = 0; has = 0; wrote = 0; mayCrash = 0; broken = 0;
    finished++
  }
}

/* ---- the reconciler: observe pools, list pods, release orphans conditionally, audit claims ---- */

proctype Reconciler()
{
  byte me, rx, i, j, q, p, a, v, k, cv, rp, rk, rv, rtries, hp, hk, rhv, nv, qv, nheld, passes, attempt, cands;
  byte ov[4]; byte ob[4]; byte obp[4]; byte cur[4]; byte cvs[4]; byte sp[4]; byte sk[4]; byte sv[4];
  byte orph, rel, released, has, fix;
  bool ok, final, wrote, mayCrash;

  mayCrash = (crasher == 3);

top:
  if
  :: passes < NPASS -> passes++
  :: finished == NACT -> final = 1; mayCrash = 0
  fi;
  /* observePools: every pool read (one request per pool) */
r_observe:
  p = 1;
  do
  :: p <= NPOOLS ->
     d_step { ov[p] = pver[p]; i = 0;
              do :: i < 4 -> if :: INPOOL(p, i) && H(p, i) != 0 -> ob[i] = H(p, i); obp[i] = p :: else -> skip fi; i++ :: else -> break od; i = 0 };
     RCP; p++
  :: else -> break
  od;
  /* pods listed after the pools, each orphan's pod re-read (revalidate): a dead attachment stays dead */
r_judge:
  skip;
  d_step { orph = 0; i = 0;
           do :: i < 4 -> if :: ob[i] != 0 && !alive[ob[i]] -> orph = orph | (1 << i) :: else -> skip fi; i++ :: else -> break od; i = 0 };
  RCP;
  /* releaseAllIf per pool, from the pool as observed (handed on), then a fresh read on conflict */
r_release:
  released = 0; p = 1;
  do
  :: p <= NPOOLS ->
     if
     :: (orph & ((obp[0] == p -> 1 : 0) | (obp[1] == p -> 2 : 0) | (obp[2] == p -> 4 : 0) | (obp[3] == p -> 8 : 0))) != 0 ->
        attempt = 0;
        do
        :: if
           :: attempt == 0 -> v = ov[p]; d_step { i = 0; do :: i < 4 -> cur[i] = (obp[i] == p -> ob[i] : 0); i++ :: else -> break od; i = 0 }
           :: else -> d_step { v = pver[p]; i = 0; do :: i < 4 -> cur[i] = (INPOOL(p, i) -> H(p, i) : 0); i++ :: else -> break od; i = 0 }; RCP
           fi;
           /* releaseIf: the reservation at its offset, unchanged since observed */
           rel = 0; a = 0;
           do
           :: a < 4 ->
              if
              :: ((orph >> a) & 1) && obp[a] == p ->
#ifdef BROKEN_PODREF
                 /* Whereabouts: the first entry with this pod name, in map order (any of them) */
                 if
                 :: INPOOL(p, 0) && cur[0] != 0 && podOf[cur[0]] == podOf[ob[a]] -> rel = rel | 1
                 :: INPOOL(p, 1) && cur[1] != 0 && podOf[cur[1]] == podOf[ob[a]] -> rel = rel | 2
                 :: INPOOL(p, 2) && cur[2] != 0 && podOf[cur[2]] == podOf[ob[a]] -> rel = rel | 4
                 :: INPOOL(p, 3) && cur[3] != 0 && podOf[cur[3]] == podOf[ob[a]] -> rel = rel | 8
                 :: else -> skip
                 fi
#else
                 if :: cur[a] == ob[a] -> rel = rel | (1 << a) :: else -> skip fi
#endif
              :: else -> skip
              fi; a++
           :: else -> break
           od;
           if :: rel == 0 -> break :: else -> skip fi;
           /* ownClaimVersions: each released address's claim, read before the pool write */
           has = 0; a = 0;
           do
           :: a < 4 ->
              if
              :: (rel >> a) & 1 -> claimRead(a, rp, rk, rv); RCP;
                 if :: rp == p -> has = has | (1 << a); cvs[a] = rv :: else -> skip fi
              :: else -> skip
              fi; a++
           :: else -> break
           od;
           rp = 0; rk = 0; rv = 0;
           d_step {
             if
             :: pver[p] == v ->
                i = 0;
                do
                :: i < 4 -> if :: (rel >> i) & 1 -> printf("MSC: reconciler released a%d (key %d) from pool %d\n", i, H(p, i), p); assert(!alive[H(p, i)]); H(p, i) = 0 :: else -> skip fi; i++   /* no live reservation released */
                :: else -> break
                od; i = 0; pver[p]++; ok = 1
             :: else -> ok = 0
             fi
           };
           RCP;
           if :: ok -> released = released | rel; break :: else -> skip fi;
           has = 0; rel = 0; attempt++;
           if :: attempt >= MAXTRY -> break :: else -> skip fi
        od;
        skip;
        d_step { i = 0; do :: i < 4 -> cur[i] = 0; i++ :: else -> break od; i = 0 };
        /* the claims, deleted at the version read; a changed one repaired (naming this entry) */
        a = 0;
        do
        :: a < 4 ->
           if
           :: (has >> a) & 1 ->
              claimDelete(a, cvs[a], ok); RCP;
              if :: !ok -> wrote = 0; rx = 0; k = ob[a]; repairClaim(a, rx, p, k, 0, wrote); k = 0 :: else -> skip fi;
              cvs[a] = 0
           :: else -> skip
           fi; a++
        :: else -> break
        od;
        has = 0; rel = 0; attempt = 0; v = 0
     :: else -> skip
     fi; p++
  :: else -> break
  od;
  /* claim audit: every claim scanned after the pools; findings against the observation less what was released */
r_audit:
  skip;
  d_step { i = 0; do :: i < 4 -> sp[i] = cpool[i]; sk[i] = ckey[i]; sv[i] = cver[i]; i++ :: else -> break od; i = 0 };
  RCP;
  a = 0;
  do
  :: a < 4 ->
     if :: (released >> a) & 1 -> ob[a] = 0; obp[a] = 0 :: else -> skip fi;
     cands = ((ov[1] != 0 && INPOOL(1, a)) -> 2 : 0) | ((ov[2] != 0 && INPOOL(2, a)) -> 4 : 0) | ((ov[3] != 0 && INPOOL(3, a)) -> 8 : 0);
     if
     :: sp[a] != 0 && (ob[a] == 0 || sp[a] != obp[a] || sk[a] != ob[a]) ->
        /* claim-without-entry, claim-names-other-entry: repairClaim at the version scanned */
        wrote = 0; rx = sv[a]; repairClaim(a, rx, 0, 0, cands, wrote)
     :: sp[a] == 0 && ob[a] != 0 ->
        /* entry-without-claim: read again, restore create-if-absent, then repairClaim (written) */
        claimRead(a, rp, rk, rv); RCP;
        fix = (rp == 0);
        if
        :: fix ->
           q = 1; nheld = 0;
           do
           :: q <= NPOOLS ->
              if
              :: ((cands >> q) & 1) ->
                 d_step { if :: H(q, a) != 0 -> nheld++; if :: !(q == obp[a] && H(q, a) == ob[a]) -> fix = 0 :: else -> skip fi :: else -> skip fi }; RCP
              :: else -> skip
              fi; q++
           :: else -> break
           od;
           if :: nheld != 1 -> fix = 0 :: else -> skip fi;
           q = 0; nheld = 0
        :: else -> skip
        fi;
        rp = 0; rk = 0; rv = 0;
        if
        :: fix -> p = obp[a]; k = ob[a]; claimCreate(a, p, k, ok, cv); RCP;
           if :: ok -> wrote = 1; rx = cv; repairClaim(a, rx, 0, 0, cands, wrote) :: else -> skip fi;
           p = 0; k = 0; cv = 0
        :: else -> skip
        fi;
        fix = 0
     :: else -> skip
     fi;
     cands = 0; a++
  :: else -> break
  od;
  goto passend;

crashed:    /* the reconciler died mid-pass: it restarts with a new pass */
  skip;
passend:
  skip;
  d_step {
    i = 0;
    do :: i < 4 -> ov[i] = 0; ob[i] = 0; obp[i] = 0; cur[i] = 0; cvs[i] = 0; sp[i] = 0; sk[i] = 0; sv[i] = 0; i++ :: else -> break od;
    i = 0; j = 0; q = 0; p = 0; a = 0; v = 0; k = 0; cv = 0; rp = 0; rk = 0; rv = 0; rtries = 0; hp = 0; hk = 0; rhv = 0; nv = 0;
    qv = 0; nheld = 0; attempt = 0; cands = 0; orph = 0; rel = 0; released = 0; has = 0; fix = 0; ok = 0; wrote = 0
  };
  if :: !final -> goto top :: else -> skip fi;
r_end:
  skip;

  /* every actor finished and a pass ran after them: nothing left that no live attachment owns */
  d_step {
    a = 0;
    do
    :: a < 4 ->
       /* no claim left that no entry backs */
       assert(cpool[a] == 0 || H(cpool[a], a) == ckey[a]);
       p = 1;
       do
       :: p <= NPOOLS ->
          if
          :: INPOOL(p, a) && H(p, a) != 0 ->
             assert(alive[H(p, a)]);                          /* no entry of a dead attachment */
             assert(cpool[a] == p && ckey[a] == H(p, a))      /* every entry has its claim */
          :: else -> skip
          fi; p++
       :: else -> break
       od;
       a++
    :: else -> break
    od
  }
}

/* The invariant between any two steps: a reservation answered to a live attachment is never lost. */
active proctype Monitor()
{
end: atomic { (LOST(1) || LOST(2)) -> assert(!(LOST(1) || LOST(2))) }
}

init {
  atomic {
#if CRASH
    /* no crash at all is every run of these in which the crash point is passed over */
#if NPASS > 0
    if :: crasher = 1 :: crasher = 2 :: crasher = 3 fi;
#else
    if :: crasher = 1 :: crasher = 2 fi;     /* the reconciler's last pass never crashes */
#endif
#endif
#if defined(SAME_KEY)
    mode = 4;
    /*
     * Node 1 owns block 0, filled before: a dead sandbox's entry (key 3, which the reconciler
     * frees) at a0 and a live attachment's (key 2, watched by the monitor) at a1, with their
     * claims; block 1 unclaimed. Keys 1 and 2 keep one pod name (only BROKEN_PODREF reads it).
     */
    aff[0] = 1;
    pver[1] = 1; H(1, 0) = 3; H(1, 1) = 2;
    cpool[0] = 1; ckey[0] = 3; cver[0] = 1;
    cpool[1] = 1; ckey[1] = 2; cver[1] = 1;
    podOf[1] = 1; podOf[2] = 1; podOf[3] = 2;
    alive[1] = 1; alive[2] = 1; added[2] = 1; gotP[2] = 1; gotA[2] = 1;
    npools = 2;
    run Allocator(1, 1, 1, 0);     /* the agent */
    run Allocator(2, 1, 1, 0);     /* the binary in direct mode, called for the same attachment at once */
#else
    /* node 3 died: block 1 is its, and it held a2 for key 3 (pod 2), with its claim */
    aff[1] = 3;
    pver[2] = 1; H(2, 2) = 3;
    cpool[2] = 2; ckey[2] = 3; cver[2] = 1;
    /* keys 1 and 2 belong to one pod name: the second is the pod reborn (a StatefulSet pod) */
    podOf[1] = 1; podOf[2] = 1; podOf[3] = 2;
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
    alive[1] = 1; alive[2] = 1;    /* the attachments live from the start (until their DEL or crash) */
    run Allocator(1, 1, 1, 0);
    if
    :: mode == 1 -> run Allocator(2, 2, 2, 0)     /* node 2: claims block 0 first, or borrows */
    :: mode == 2 -> run Allocator(2, 1, 2, 0)     /* the binary in direct mode beside the agent, same node */
    :: mode == 3 -> run Allocator(2, 0, 2, 1)     /* a direct writer of the overlapping plain pool */
    fi;
#endif
    run Reconciler()
  }
}

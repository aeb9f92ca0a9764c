#!/usr/bin/env python3
"""Quick independent checker for the ASCII INRIA .mesh sample files (not part of the crate).

usage: python3 check_mesh.py FILE.mesh ...
Checks node indices in range, duplicated / degenerate elements, tet signed volumes
(b-a)x(c-a).(d-a) computed exactly with Fractions of the printed coordinates, total volume,
boundary-face orientation against the adjacent cell, closed-surface consistency, hex corner
Jacobians, planar triangle/edge orientation. Exits on an unknown keyword."""
import sys, collections
from fractions import Fraction

NODES = {'Vertices': None, 'Edges': 2, 'Triangles': 3, 'Quadrilaterals': 4,
         'Tetrahedra': 4, 'Prisms': 6, 'Hexahedra': 8, 'Pyramids': 5}
ONEINT = {'Corners', 'Ridges', 'RequiredVertices', 'RequiredEdges', 'RequiredTriangles'}

def tokens(path):
    with open(path) as f:
        for line in f:
            line = line.split('#', 1)[0]
            for t in line.split():
                yield t

def parse(path):
    it = tokens(path)
    d = {'keywords': [], 'blocks': {}}
    dim = None
    for t in it:
        if t == 'MeshVersionFormatted':
            d['version'] = int(next(it)); d['keywords'].append(t)
        elif t == 'Dimension':
            dim = int(next(it)); d['dim'] = dim; d['keywords'].append(t)
        elif t == 'End':
            d['keywords'].append(t); break
        elif t == 'Vertices':
            n = int(next(it)); rows = []
            for _ in range(n):
                xyz = [float(next(it)) for _ in range(dim)]
                ref = int(next(it)); rows.append((xyz, ref))
            d['blocks'][t] = rows; d['keywords'].append((t, n))
        elif t in NODES:
            n = int(next(it)); k = NODES[t]; rows = []
            for _ in range(n):
                v = [int(next(it)) for _ in range(k)]
                ref = int(next(it)); rows.append((v, ref))
            d['blocks'][t] = rows; d['keywords'].append((t, n))
        elif t in ONEINT:
            n = int(next(it)); rows = [int(next(it)) for _ in range(n)]
            d['blocks'][t] = rows; d['keywords'].append((t, n))
        else:
            raise SystemExit(f'unknown keyword {t!r} in {path}')
    return d

def sub(a, b): return [x - y for x, y in zip(a, b)]
def cross(a, b): return [a[1]*b[2]-a[2]*b[1], a[2]*b[0]-a[0]*b[2], a[0]*b[1]-a[1]*b[0]]
def dot(a, b): return sum(x*y for x, y in zip(a, b))

def face_orient(kw, rows, d, X):
    vols = d['blocks'].get('Tetrahedra') or d['blocks'].get('Hexahedra')
    if d['dim'] == 2 or all(x[2] == 0 for x in X):
        pos = neg = 0; area = Fraction(0)
        for v, _ in rows:
            p = [X[i-1] for i in v]
            s = sum(p[k][0]*p[(k+1)%len(p)][1] - p[(k+1)%len(p)][0]*p[k][1] for k in range(len(p))) / 2
            area += s
            if s > 0: pos += 1
            else: neg += 1
        print(f'    planar (xy) signed area: counter-clockwise {pos}  clockwise {neg};  total signed area = {float(area):.15g}')
        return
    if vols is None:
        # closed surface: edge manifoldness/consistency and enclosed volume sign
        ec = collections.Counter(); de = collections.Counter()
        vol = Fraction(0)
        for v, _ in rows:
            for k in range(len(v)):
                a, b = v[k], v[(k+1) % len(v)]
                ec[tuple(sorted((a, b)))] += 1; de[(a, b)] += 1
            p = [X[i-1] for i in v]
            for k in range(1, len(p)-1):
                vol += dot(p[0], cross(p[k], p[k+1])) / 6
        nonman = sum(1 for c in ec.values() if c != 2)
        same = sum(1 for c in de.values() if c > 1)
        print(f'    surface: edges {len(ec)}  edges not shared by exactly 2 faces {nonman}  '
              f'directed edges used twice (inconsistent orientation) {same};  '
              f'enclosed signed volume sum a.(bxc)/6 = {float(vol):.10g} ({"outward" if vol > 0 else "inward"} normals)')
        return
    # faces with an adjacent volume element: outward if normal points away from the element centroid
    k = len(rows[0][0])
    cellnodes = collections.defaultdict(list)
    for ci, (cv, _) in enumerate(vols):
        for i in cv: cellnodes[i].append(ci)
    out = inw = interior = orphan = 0
    for v, _ in rows:
        cand = set(cellnodes[v[0]])
        for i in v[1:]: cand &= set(cellnodes[i])
        if len(cand) == 0: orphan += 1; continue
        if len(cand) > 1: interior += 1; continue
        cv = vols[cand.pop()][0]
        c = [sum(X[i-1][j] for i in cv) / len(cv) for j in range(3)]
        p = [X[i-1] for i in v]
        n = cross(sub(p[1], p[0]), sub(p[2], p[0]))
        if dot(n, sub(c, p[0])) < 0: out += 1
        else: inw += 1
    print(f'    boundary-face orientation (right-hand normal vs adjacent cell): outward {out}  inward {inw};  '
          f'faces shared by 2 cells (interior) {interior};  faces with no cell {orphan}')

def main(path):
    d = parse(path)
    print(f'== {path}')
    print('  MeshVersionFormatted', d.get('version'), ' Dimension', d.get('dim'))
    print('  keyword sequence:', d['keywords'])
    V = d['blocks']['Vertices']; nv = len(V)
    X = [[Fraction(c) for c in x] + [Fraction(0)] * (3 - len(x)) for x, _ in V]
    ok = True
    print('  vertex refs:', dict(sorted(collections.Counter(r for _, r in V).items())))
    lo = [min(x[i] for x, _ in V) for i in range(d['dim'])]
    hi = [max(x[i] for x, _ in V) for i in range(d['dim'])]
    print('  bbox', lo, hi)
    used = set()
    for kw, rows in d['blocks'].items():
        if kw == 'Vertices': continue
        if kw in ONEINT:
            bad = [i for i in rows if not 1 <= i <= nv]
            print(f'  {kw}: {len(rows)} entries, out of range {len(bad)}')
            ok &= not bad; continue
        bad = sum(1 for v, _ in rows for i in v if not 1 <= i <= nv)
        for v, _ in rows: used.update(v)
        keys = collections.Counter(tuple(sorted(v)) for v, _ in rows)
        dups = sum(c - 1 for c in keys.values() if c > 1)
        degen = sum(1 for v, _ in rows if len(set(v)) != len(v))
        refs = dict(sorted(collections.Counter(r for _, r in rows).items()))
        print(f'  {kw}: {len(rows)}  out-of-range idx {bad}  duplicates {dups}  repeated-node {degen}  refs {refs}')
        ok &= bad == 0 and dups == 0 and degen == 0
        if kw == 'Tetrahedra':
            pos = neg = zero = 0; tot = Fraction(0)
            for v, _ in rows:
                a, b, c, e = (X[i-1] for i in v)
                s = dot(cross(sub(b, a), sub(c, a)), sub(e, a))
                if s > 0: pos += 1
                elif s < 0: neg += 1
                else: zero += 1
                tot += abs(s) / 6
            print(f'    signed volume (b-a)x(c-a).(d-a): positive {pos}  negative {neg}  zero {zero};  total |vol| = {float(tot):.15g}')
        if kw == 'Hexahedra':
            # volume by splitting each hex (0..7 = bottom 0123, top 4567) into 6 tets sharing diagonal 0-6
            pos = neg = 0; tot = 0.0
            for v, _ in rows:
                p = [X[i-1] for i in v]
                s = dot(cross(sub(p[1], p[0]), sub(p[3], p[0])), sub(p[4], p[0]))
                if s > 0: pos += 1
                else: neg += 1
                tets = [(0,1,2,6),(0,2,3,6),(0,3,7,6),(0,7,4,6),(0,4,5,6),(0,5,1,6)]
                tot += abs(float(sum(dot(cross(sub(p[b], p[a]), sub(p[c], p[a])), sub(p[e], p[a])) for a, b, c, e in tets) / 6))
            print(f'    corner-0 triple (v1-v0)x(v3-v0).(v4-v0): positive {pos}  negative {neg};  total volume = {tot:.15g}')
            nbr = {0:(1,3,4),1:(2,0,5),2:(3,1,6),3:(0,2,7),4:(7,5,0),5:(4,6,1),6:(5,7,2),7:(6,4,3)}
            badc = 0
            for v, _ in rows:
                p = [X[i-1] for i in v]
                for k, (a, b, c) in nbr.items():
                    if dot(cross(sub(p[a], p[k]), sub(p[b], p[k])), sub(p[c], p[k])) <= 0: badc += 1
            print(f'    hex corners with non-positive Jacobian: {badc}')
            faces = [(0,3,2,1),(4,5,6,7),(0,1,5,4),(1,2,6,5),(2,3,7,6),(3,0,4,7)]  # outward for a positive hex
            canon = lambda c: min(tuple(c[m:] + c[:m]) for m in range(len(c)) if c[m] == min(c))
            fs = {canon([v[i] for i in f]) for v, _ in rows for f in faces}
            out = inw = no = 0
            for q, _ in d['blocks'].get('Quadrilaterals', []):
                if canon(list(q)) in fs: out += 1
                elif canon(list(reversed(q))) in fs: inw += 1
                else: no += 1
            print(f'    Quadrilaterals vs hex faces (0321,4567,0154,1265,2376,3047): same cycle {out}  reversed {inw}  not a hex face {no}')
        if kw in ('Triangles', 'Quadrilaterals'):
            face_orient(kw, rows, d, X)
    if 'Edges' in d['blocks'] and 'Triangles' in d['blocks'] and all(x[2] == 0 for x in X):
        de = {(v[k], v[(k+1) % 3]) for v, _ in d['blocks']['Triangles'] for k in range(3)}
        same = sum((a, b) in de for (a, b), _ in d['blocks']['Edges'])
        print(f'  planar Edges directed like their triangle (domain on the left): {same} of {len(d["blocks"]["Edges"])}')
    unused = nv - len(used)
    print(f'  vertices not used by any element: {unused}')
    print('  RESULT', 'OK' if ok else 'PROBLEM')
    return d

if __name__ == '__main__':
    for p in sys.argv[1:]:
        main(p)

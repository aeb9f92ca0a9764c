// gml toolkit: geometric helpers available in every gml kernel (GMlib's toolkit.cl, with its
// volume and quality formulas corrected). Points are float4 with w ignored.

// Squared distance between a and b.
float DisPow(float4 a, float4 b) { const float4 d = (b - a) * (float4)(1, 1, 1, 0); return dot(d, d); }

// Distance between a and b.
float CalLen(float4 a, float4 b) { return sqrt(DisPow(a, b)); }

// Twice the area of triangle abc.
float CalSrf(float4 a, float4 b, float4 c) { return length(cross((b - a).xyz, (c - a).xyz)); }

// Six times the signed volume of tetrahedron abcd: positive when (b-a)x(c-a).(d-a) > 0.
float CalVol(float4 a, float4 b, float4 c, float4 d)
{
    return dot(cross((b - a).xyz, (c - a).xyz), (d - a).xyz);
}

// Length of edge ab.
float CalEdgLen(float4 a, float4 b) { return CalLen(a, b); }

// Area of triangle abc.
float CalTriSrf(float4 a, float4 b, float4 c) { return 0.5f * CalSrf(a, b, c); }

// Signed volume of tetrahedron abcd.
float CalTetVol(float4 a, float4 b, float4 c, float4 d) { return CalVol(a, b, c, d) / 6.0f; }

// Unit normal of triangle abc (right-hand rule), w = 0.
float4 GetTriNrm(float4 a, float4 b, float4 c)
{
    return (float4)(normalize(cross((b - a).xyz, (c - a).xyz)), 0.0f);
}

// Both qualities are computed on the edge vectors from the first node, scaled by the power of
// two that brings their largest component to [1, 2): the scaling is exact, and the quality is
// that of the same shape at unit size. Unscaled, the squared edges and the volume of a
// well-shaped element with 1e-30 m edges underflow float and its quality came out 0.

// Triangle quality 4*sqrt(3)*area / (sum of squared edges): 1 for an equilateral triangle.
float CalTriQal(float4 a, float4 b, float4 c)
{
    const float4 xyz = (float4)(1.0f, 1.0f, 1.0f, 0.0f);
    float4 u = (b - a) * xyz, v = (c - a) * xyz;
    const float4 m = fmax(fabs(u), fabs(v));
    const float largest = fmax(fmax(m.x, m.y), m.z);
    if (largest == 0.0f) return 0.0f;
    const int e = ilogb(largest);
    u = ldexp(u, -e);
    v = ldexp(v, -e);
    const float edges = dot(u, u) + dot(v, v) + DisPow(u, v);
    return edges > 0.0f ? 6.92820323f * 0.5f * length(cross(u.xyz, v.xyz)) / edges : 0.0f;
}

// Tetrahedron quality 12*(3V)^(2/3) / (sum of squared edges): 1 for a regular tetrahedron,
// negative for an inverted one.
float CalTetQal(float4 a, float4 b, float4 c, float4 d)
{
    const float4 xyz = (float4)(1.0f, 1.0f, 1.0f, 0.0f);
    float4 u = (b - a) * xyz, v = (c - a) * xyz, w = (d - a) * xyz;
    const float4 m = fmax(fmax(fabs(u), fabs(v)), fabs(w));
    const float largest = fmax(fmax(m.x, m.y), m.z);
    if (largest == 0.0f) return 0.0f;
    const int e = ilogb(largest);
    u = ldexp(u, -e);
    v = ldexp(v, -e);
    w = ldexp(w, -e);
    const float vol = dot(cross(u.xyz, v.xyz), w.xyz) / 6.0f;
    const float edges = dot(u, u) + dot(v, v) + dot(w, w)
                      + DisPow(u, v) + DisPow(u, w) + DisPow(v, w);
    const float q = 12.0f * pow(3.0f * fabs(vol), 2.0f / 3.0f);
    return edges > 0.0f ? copysign(q / edges, vol) : 0.0f;
}

// Local numbering of sub-entities, as gml's links use it (entry i of TetTri[4], TetNgb[4], …
// is face i of the tetrahedron). Faces turn outward for positive elements.
__constant int GmlTriEdg[3][2] = {{0, 1}, {1, 2}, {2, 0}};
__constant int GmlTetEdg[6][2] = {{0, 1}, {1, 2}, {2, 0}, {3, 0}, {3, 1}, {3, 2}};
__constant int GmlTetFac[4][3] = {{1, 2, 3}, {2, 0, 3}, {3, 0, 1}, {0, 2, 1}};

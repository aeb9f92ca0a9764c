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

// Triangle quality 4*sqrt(3)*area / (sum of squared edges): 1 for an equilateral triangle.
float CalTriQal(float4 a, float4 b, float4 c)
{
    const float edges = DisPow(a, b) + DisPow(b, c) + DisPow(c, a);
    return edges > 0.0f ? 6.92820323f * CalTriSrf(a, b, c) / edges : 0.0f;
}

// Tetrahedron quality 12*(3V)^(2/3) / (sum of squared edges): 1 for a regular tetrahedron,
// negative for an inverted one.
float CalTetQal(float4 a, float4 b, float4 c, float4 d)
{
    const float v = CalTetVol(a, b, c, d);
    const float edges = DisPow(a, b) + DisPow(a, c) + DisPow(a, d)
                      + DisPow(b, c) + DisPow(b, d) + DisPow(c, d);
    const float q = 12.0f * pow(3.0f * fabs(v), 2.0f / 3.0f);
    return edges > 0.0f ? copysign(q / edges, v) : 0.0f;
}

// Local numbering of sub-entities, as gml's links use it (entry i of TetTri[4], TetNgb[4], …
// is face i of the tetrahedron). Faces turn outward for positive elements.
__constant int GmlTriEdg[3][2] = {{0, 1}, {1, 2}, {2, 0}};
__constant int GmlTetEdg[6][2] = {{0, 1}, {1, 2}, {2, 0}, {3, 0}, {3, 1}, {3, 2}};
__constant int GmlTetFac[4][3] = {{1, 2, 3}, {2, 0, 3}, {3, 0, 1}, {0, 2, 1}};

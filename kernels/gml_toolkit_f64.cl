// gml toolkit in double precision: the geometric helpers of gml_toolkit.cl for double4 points
// (w ignored), with the same names and an F64 suffix. Included only in kernels that access f64
// data (after `#pragma OPENCL EXTENSION cl_khr_fp64 : enable`), so devices without FP64 never
// see it.

// Squared distance between a and b.
double DisPowF64(double4 a, double4 b) { const double4 d = (b - a) * (double4)(1, 1, 1, 0); return dot(d, d); }

// Distance between a and b.
double CalLenF64(double4 a, double4 b) { return sqrt(DisPowF64(a, b)); }

// Twice the area of triangle abc.
double CalSrfF64(double4 a, double4 b, double4 c) { return length(cross((b - a).xyz, (c - a).xyz)); }

// Six times the signed volume of tetrahedron abcd: positive when (b-a)x(c-a).(d-a) > 0.
double CalVolF64(double4 a, double4 b, double4 c, double4 d)
{
    return dot(cross((b - a).xyz, (c - a).xyz), (d - a).xyz);
}

// Area of triangle abc.
double CalTriSrfF64(double4 a, double4 b, double4 c) { return 0.5 * CalSrfF64(a, b, c); }

// Signed volume of tetrahedron abcd.
double CalTetVolF64(double4 a, double4 b, double4 c, double4 d) { return CalVolF64(a, b, c, d) / 6.0; }

// Both qualities are computed on the edge vectors from the first node, scaled by the power of
// two that brings their largest component to [1, 2), as in gml_toolkit.cl: the quality of a
// shape does not depend on its size, down to the smallest double.

// Triangle quality 4*sqrt(3)*area / (sum of squared edges): 1 for an equilateral triangle.
double CalTriQalF64(double4 a, double4 b, double4 c)
{
    const double4 xyz = (double4)(1.0, 1.0, 1.0, 0.0);
    double4 u = (b - a) * xyz, v = (c - a) * xyz;
    const double4 m = fmax(fabs(u), fabs(v));
    const double largest = fmax(fmax(m.x, m.y), m.z);
    if (largest == 0.0) return 0.0;
    const int e = ilogb(largest);
    u = ldexp(u, -e);
    v = ldexp(v, -e);
    const double edges = dot(u, u) + dot(v, v) + DisPowF64(u, v);
    return edges > 0.0 ? 6.928203230275509 * 0.5 * length(cross(u.xyz, v.xyz)) / edges : 0.0;
}

// Tetrahedron quality 12*(3V)^(2/3) / (sum of squared edges): 1 for a regular tetrahedron,
// negative for an inverted one.
double CalTetQalF64(double4 a, double4 b, double4 c, double4 d)
{
    const double4 xyz = (double4)(1.0, 1.0, 1.0, 0.0);
    double4 u = (b - a) * xyz, v = (c - a) * xyz, w = (d - a) * xyz;
    const double4 m = fmax(fmax(fabs(u), fabs(v)), fabs(w));
    const double largest = fmax(fmax(m.x, m.y), m.z);
    if (largest == 0.0) return 0.0;
    const int e = ilogb(largest);
    u = ldexp(u, -e);
    v = ldexp(v, -e);
    w = ldexp(w, -e);
    const double vol = dot(cross(u.xyz, v.xyz), w.xyz) / 6.0;
    const double edges = dot(u, u) + dot(v, v) + dot(w, w)
                       + DisPowF64(u, v) + DisPowF64(u, w) + DisPowF64(v, w);
    const double q = 12.0 * pow(3.0 * fabs(vol), 2.0 / 3.0);
    return edges > 0.0 ? copysign(q / edges, vol) : 0.0;
}

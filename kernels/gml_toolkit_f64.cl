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

// Triangle quality 4*sqrt(3)*area / (sum of squared edges): 1 for an equilateral triangle.
double CalTriQalF64(double4 a, double4 b, double4 c)
{
    const double edges = DisPowF64(a, b) + DisPowF64(b, c) + DisPowF64(c, a);
    return edges > 0.0 ? 6.928203230275509 * CalTriSrfF64(a, b, c) / edges : 0.0;
}

// Tetrahedron quality 12*(3V)^(2/3) / (sum of squared edges): 1 for a regular tetrahedron,
// negative for an inverted one.
double CalTetQalF64(double4 a, double4 b, double4 c, double4 d)
{
    const double v = CalTetVolF64(a, b, c, d);
    const double edges = DisPowF64(a, b) + DisPowF64(a, c) + DisPowF64(a, d)
                       + DisPowF64(b, c) + DisPowF64(b, d) + DisPowF64(c, d);
    const double q = 12.0 * pow(3.0 * fabs(v), 2.0 / 3.0);
    return edges > 0.0 ? copysign(q / edges, v) : 0.0;
}

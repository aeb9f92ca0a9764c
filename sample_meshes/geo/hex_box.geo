// Box [0,2]x[0,1.5]x[0,1] meshed with 16x12x8 hexahedra (transfinite + Recombine), cells are
// cubes of side 0.125, total volume 3.
// Boundary refs (Physical Surface tags, written on Quadrilaterals):
//   1 x=0, 2 x=2, 3 y=0, 4 y=1.5, 5 z=0, 6 z=1.   Volume ref (Physical Volume tag): 1.
Mesh.SaveElementTagType = 2; // physical tags as refs (gmsh 4.8 default is elementary tags)
Lx = 2; Ly = 1.5; Lz = 1;
Nx = 16; Ny = 12; Nz = 8;   // cells per direction
Point(1) = {0,  0,  0};
Point(2) = {Lx, 0,  0};
Point(3) = {Lx, Ly, 0};
Point(4) = {0,  Ly, 0};
Point(5) = {0,  0,  Lz};
Point(6) = {Lx, 0,  Lz};
Point(7) = {Lx, Ly, Lz};
Point(8) = {0,  Ly, Lz};
Line(1) = {1, 2};  Line(2) = {2, 3};  Line(3) = {3, 4};  Line(4) = {4, 1};
Line(5) = {5, 6};  Line(6) = {6, 7};  Line(7) = {7, 8};  Line(8) = {8, 5};
Line(9) = {1, 5};  Line(10) = {2, 6}; Line(11) = {3, 7}; Line(12) = {4, 8};
Transfinite Curve{1, 3, 5, 7}   = Nx + 1;  // along x
Transfinite Curve{2, 4, 6, 8}   = Ny + 1;  // along y
Transfinite Curve{9, 10, 11, 12} = Nz + 1; // along z
// every curve loop runs counter-clockwise seen from outside the box
Curve Loop(1) = {9, -8, -12, 4};   Plane Surface(1) = {1}; // x=0
Curve Loop(2) = {2, 11, -6, -10};  Plane Surface(2) = {2}; // x=Lx
Curve Loop(3) = {1, 10, -5, -9};   Plane Surface(3) = {3}; // y=0
Curve Loop(4) = {12, -7, -11, 3};  Plane Surface(4) = {4}; // y=Ly
Curve Loop(5) = {-4, -3, -2, -1};  Plane Surface(5) = {5}; // z=0
Curve Loop(6) = {5, 6, 7, 8};      Plane Surface(6) = {6}; // z=Lz
Transfinite Surface{1:6};
Recombine Surface{1:6};
Surface Loop(1) = {1, 2, 3, 4, 5, 6};
Volume(1) = {1};
Transfinite Volume{1};
Recombine Volume{1};
Physical Surface(1) = {1};
Physical Surface(2) = {2};
Physical Surface(3) = {3};
Physical Surface(4) = {4};
Physical Surface(5) = {5};
Physical Surface(6) = {6};
Physical Volume(1) = {1};

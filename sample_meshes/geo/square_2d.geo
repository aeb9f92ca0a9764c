// Unit square [0,1]^2 in the plane z=0, triangle mesh (gmsh -2).
// Boundary refs (Physical Curve tags, written as Edges): 1 y=0, 2 x=1, 3 y=1, 4 x=0.
// Triangle ref (Physical Surface tag): 1.
Mesh.SaveElementTagType = 2; // physical tags as refs (gmsh 4.8 default is elementary tags)
lc = 0.02;
Point(1) = {0, 0, 0, lc};
Point(2) = {1, 0, 0, lc};
Point(3) = {1, 1, 0, lc};
Point(4) = {0, 1, 0, lc};
Line(1) = {1, 2};
Line(2) = {2, 3};
Line(3) = {3, 4};
Line(4) = {4, 1};
Curve Loop(1) = {1, 2, 3, 4}; // counter-clockwise
Plane Surface(1) = {1};
Physical Curve(1) = {1};
Physical Curve(2) = {2};
Physical Curve(3) = {3};
Physical Curve(4) = {4};
Physical Surface(1) = {1};

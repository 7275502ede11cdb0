// @refuse: enum
// @transform
enum M {
    One = 1,
    Two,
    // comment
    Ten = 10,
}
const line = new Error().stack; return [M.One, M.Two, M.Ten, M[2]]

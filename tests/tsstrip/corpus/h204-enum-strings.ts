// @refuse: enum
// @transform
enum S { Up = "UP", Down = "DOWN" }
return [S.Up, S.Down, Object.keys(S)]

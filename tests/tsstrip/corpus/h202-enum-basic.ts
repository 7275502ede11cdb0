// @refuse: enum
// @transform
enum Color { Red, Green, Blue }
return [Color.Red, Color.Green, Color.Blue, Color[1]]

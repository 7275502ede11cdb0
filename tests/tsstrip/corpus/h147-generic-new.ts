class Box<T> { constructor(public_v?: T) { this.v = public_v } v?: T } return new Box<number>(2).v

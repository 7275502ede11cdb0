class Bag { [key: string]: unknown; static [k: string]: number; readonly [i: number]: string; n = 1 } return Object.keys(new Bag())

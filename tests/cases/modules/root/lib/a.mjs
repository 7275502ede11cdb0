// a and b import each other: each module is loaded once and the cycle links.
import { b } from "./b.mjs";
export const a = () => "a" + b();

import { a } from "./a.mjs";
export const b = () => "b";
export const viaA = () => a();

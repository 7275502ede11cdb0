import { z } from "./nope.mjs";
export const a = z;

"use strict";
async function buildBpeVariants() { return {}; }
module.exports = { buildBpeVariants };

/**
 * `bulwark/redis`: reserved entry point. Its patterns land with their issues (see docs/);
 * until then it exports nothing.
 */
export {};

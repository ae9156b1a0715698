// The error contract lives in src/errors.ts (services throw it too); routes import it from here.
export { ApiError, errors, parseOrThrow, zodIssues } from '../errors';

// The personas folder's only public door: import from here, never from its inner files.
export { declarationHash, listPersonas, loadPersona } from './load.js';
export { modelRetirements, type ModelRetirement } from './retired.js';
export {
  MAX_TIMEOUT_MS,
  PERSONA_DIR,
  PERSONA_MAX_BYTES,
  PersonaDeclarationSchema,
  ROLE_PATTERN,
  type NormalisedPersona,
  type Persona,
  type PersonaDeclaration,
  type PersonaProblem,
} from '../../../protocol/persona.js';

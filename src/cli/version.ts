// What `harvester-machine --version` prints. The single executable's build defines
// HM_BUILD_REVISION (scripts/build-executable.sh: the commit the sources were built from,
// with "-dirty" when they had uncommitted changes); run from source under Node there is none.
declare const HM_BUILD_REVISION: string | undefined;

export const VERSION = '0.1.0';

export function versionText(): string {
  const origin = typeof HM_BUILD_REVISION === 'string' ? `revision ${HM_BUILD_REVISION}` : 'from source';
  return `harvester-machine ${VERSION} (${origin}, Node.js ${process.versions.node})`;
}

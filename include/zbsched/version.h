/* version.h - the one version of zbsched and zbexec (`--version`). */
#ifndef ZBSCHED_VERSION_H
#define ZBSCHED_VERSION_H

#define ZB_VERSION "0.9.0"

#endif

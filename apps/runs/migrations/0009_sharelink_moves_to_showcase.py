from django.db import migrations


class Migration(migrations.Migration):
    """ShareLink now belongs to apps.showcase (showcase 0001 takes it over with its table, runs_sharelink);
    nothing in the database changes."""

    dependencies = [
        ('runs', '0008_run_task_revision'),
        ('showcase', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[migrations.DeleteModel(name='ShareLink')],
                                            database_operations=[]),
    ]

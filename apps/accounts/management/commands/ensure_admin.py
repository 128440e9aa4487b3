import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Create a local superuser 'admin' with a random password if no superuser exists, and print it."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="admin")

    def handle(self, *args, username="admin", **options):
        User = get_user_model()
        credentials = settings.VAR_DIR / "admin-credentials.txt"
        if User.objects.filter(is_superuser=True).exists():
            hint = f" (first credentials in {credentials})" if credentials.exists() else ""
            self.stdout.write(f"superuser exists{hint}")
            return
        password = secrets.token_urlsafe(12)
        User.objects.create_superuser(username=username, email="", password=password)
        credentials.parent.mkdir(parents=True, exist_ok=True)
        credentials.write_text(f"username: {username}\npassword: {password}\n")
        credentials.chmod(0o600)
        self.stdout.write(self.style.SUCCESS(f"created superuser  username: {username}  password: {password}"))
        self.stdout.write(f"(also saved to {credentials})")
